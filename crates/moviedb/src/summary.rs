//! Review summaries: the thresholds, the server-side summariser, and the prompt contract with
//! a client's model (two lines, `SUMMARY: …` and `THEMES: a; b; c`) with a forgiving reader.

use serde::Serialize;

/// Fewer reviews than this get an average but no prose summary.
pub const MIN_REVIEWS_FOR_SUMMARY: usize = 3;

/// The system prompt of a sampling request.
pub const SYSTEM_PROMPT: &str =
    "You summarize movie reviews into a few sentences and recurring themes.";

/// Token budget of a sampling request.
pub const MAX_TOKENS: u32 = 1024;

/// How many themes the server-side summariser names.
const FALLBACK_THEMES: usize = 5;

/// The most of a model's answer that is read (the answer is asked for in 1,024 tokens, a few
/// kilobytes); the rest is ignored, so an oversized answer costs no more than this.
pub const MAX_REPLY_BYTES: usize = 16 * 1024;

/// The longest summary kept from a model's answer, in characters.
pub const MAX_SUMMARY_CHARS: usize = 2_000;

/// The most themes kept from a model's answer.
pub const MAX_THEMES: usize = 8;

/// The longest theme kept, in characters; longer ones are not themes and are skipped.
pub const MAX_THEME_CHARS: usize = 60;

/// `text` cut to at most `max` bytes, at a character boundary.
fn prefix(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// Words that say nothing about a movie: English function words, and the filler of reviews.
const STOP_WORDS: &[&str] = &[
    "about",
    "above",
    "actually",
    "after",
    "again",
    "against",
    "almost",
    "along",
    "already",
    "also",
    "although",
    "always",
    "among",
    "another",
    "anyone",
    "anything",
    "around",
    "away",
    "back",
    "because",
    "been",
    "before",
    "being",
    "below",
    "best",
    "better",
    "between",
    "both",
    "came",
    "cannot",
    "come",
    "comes",
    "could",
    "does",
    "doing",
    "done",
    "down",
    "during",
    "each",
    "either",
    "else",
    "enough",
    "even",
    "ever",
    "every",
    "everything",
    "film",
    "films",
    "find",
    "first",
    "from",
    "gets",
    "give",
    "gives",
    "goes",
    "going",
    "good",
    "great",
    "have",
    "having",
    "here",
    "into",
    "just",
    "kind",
    "know",
    "last",
    "least",
    "less",
    "like",
    "little",
    "long",
    "look",
    "made",
    "make",
    "makes",
    "many",
    "might",
    "more",
    "most",
    "movie",
    "movies",
    "much",
    "must",
    "need",
    "never",
    "next",
    "nothing",
    "once",
    "only",
    "other",
    "others",
    "over",
    "part",
    "perhaps",
    "pretty",
    "quite",
    "rather",
    "really",
    "said",
    "same",
    "says",
    "scene",
    "scenes",
    "seem",
    "seems",
    "seen",
    "several",
    "should",
    "show",
    "shows",
    "since",
    "some",
    "something",
    "still",
    "story",
    "such",
    "sure",
    "take",
    "takes",
    "than",
    "that",
    "their",
    "them",
    "then",
    "there",
    "these",
    "they",
    "thing",
    "things",
    "think",
    "this",
    "those",
    "though",
    "through",
    "time",
    "times",
    "together",
    "told",
    "took",
    "totally",
    "truly",
    "under",
    "until",
    "upon",
    "very",
    "want",
    "watch",
    "watched",
    "watching",
    "well",
    "went",
    "were",
    "what",
    "when",
    "where",
    "whether",
    "which",
    "while",
    "whole",
    "will",
    "with",
    "within",
    "without",
    "would",
    "year",
    "years",
    "your",
];

/// One review as the summariser sees it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, serde::Deserialize)]
pub struct ReviewText {
    /// Score, 1–10.
    pub score: i32,
    /// The comment, if any.
    pub comment: Option<String>,
}

/// Who wrote a summary's prose.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum SummarySource {
    /// The client's model, through sampling.
    ClientModel,
    /// The server's own rule-based summariser.
    Server,
}

/// A movie's review summary.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ReviewSummary {
    /// The movie, as the caller named it.
    pub movie_id: String,
    /// How many reviews there are.
    pub review_count: usize,
    /// Prose summary; `None` below [`MIN_REVIEWS_FOR_SUMMARY`] reviews.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    /// Recurring themes (empty without a summary).
    pub themes: Vec<String>,
    /// Mean score (two decimals); `None` without reviews.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub average_score: Option<f64>,
    /// Who wrote the summary; `None` without one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<SummarySource>,
}

/// Prose and themes, from whichever summariser wrote them.
#[derive(Debug, Clone, PartialEq)]
pub struct Prose {
    /// A few sentences.
    pub summary: String,
    /// Recurring themes.
    pub themes: Vec<String>,
    /// Who wrote it.
    pub source: SummarySource,
}

/// The mean score, or `None` for no reviews.
pub fn average(reviews: &[ReviewText]) -> Option<f64> {
    if reviews.is_empty() {
        return None;
    }
    let sum: i64 = reviews.iter().map(|r| i64::from(r.score)).sum();
    Some(sum as f64 / reviews.len() as f64)
}

fn round_to(value: f64, decimals: i32) -> f64 {
    let factor = 10f64.powi(decimals);
    (value * factor).round() / factor
}

/// The one way a summary is made: the count and the average of `reviews`, and, from
/// [`MIN_REVIEWS_FOR_SUMMARY`] reviews on, the prose `write` makes of them (the server's own
/// summariser, or the client's model with that as its fallback); below that, `write` is not
/// called and the summary is null ("not enough reviews yet").
pub async fn summarize<E>(
    movie_id: i64,
    reviews: &[ReviewText],
    write: impl AsyncFnOnce(&[ReviewText]) -> Result<Prose, E>,
) -> Result<ReviewSummary, E> {
    let (summary, themes, source) = if reviews.len() >= MIN_REVIEWS_FOR_SUMMARY {
        let prose = write(reviews).await?;
        (Some(prose.summary), prose.themes, Some(prose.source))
    } else {
        (None, Vec::new(), None)
    };
    Ok(ReviewSummary {
        movie_id: movie_id.to_string(),
        review_count: reviews.len(),
        summary,
        themes,
        average_score: average(reviews).map(|a| round_to(a, 2)),
        source,
    })
}

/// The server-side summariser: a sentence from the average, and the first distinct content
/// words of the comments as themes.
pub fn server_prose(reviews: &[ReviewText]) -> Prose {
    let avg = round_to(average(reviews).unwrap_or(0.0), 1);
    let summary = if avg > 7.0 {
        format!("Reviewers respond favorably overall, averaging {avg:.1} out of 10.")
    } else if avg < 5.0 {
        format!("Reviewers respond unfavorably overall, averaging {avg:.1} out of 10.")
    } else {
        format!("Reviewers are split, averaging {avg:.1} out of 10.")
    };
    // Words of substance (four letters or more, not filler), ranked by how many reviews use
    // them; ties keep the order they first appear in.
    let mut counts: Vec<(String, usize)> = Vec::new();
    for comment in reviews.iter().filter_map(|r| r.comment.as_deref()) {
        let mut seen_here = std::collections::HashSet::new();
        for word in comment.split(|ch: char| !ch.is_alphabetic()) {
            let word = word.to_lowercase();
            if word.chars().count() < 4
                || STOP_WORDS.contains(&word.as_str())
                || !seen_here.insert(word.clone())
            {
                continue;
            }
            match counts.iter_mut().find(|(w, _)| *w == word) {
                Some((_, n)) => *n += 1,
                None => counts.push((word, 1)),
            }
        }
    }
    counts.sort_by_key(|(_, n)| std::cmp::Reverse(*n));
    let themes: Vec<String> = counts
        .into_iter()
        .take(FALLBACK_THEMES)
        .map(|(word, _)| word)
        .collect();
    Prose {
        summary,
        themes,
        source: SummarySource::Server,
    }
}

/// The user message of a sampling request: the two-line answer contract and every review.
pub fn sampling_prompt(title: Option<&str>, reviews: &[ReviewText]) -> String {
    let mut text = String::from(
        "Summarize these reviews. Scores are whole numbers from 1 (worst) to 10 (best). \
         Answer in exactly two lines and nothing else:\n\
         SUMMARY: two or three sentences on what reviewers think\n\
         THEMES: theme one; theme two; theme three\n\n",
    );
    if let Some(title) = title {
        text.push_str(&format!("Reviews of {title}:\n"));
    } else {
        text.push_str("Reviews:\n");
    }
    for review in reviews {
        let comment = review.comment.as_deref().unwrap_or("(no comment)");
        text.push_str(&format!("- score {}: {}\n", review.score, comment.trim()));
    }
    text
}

/// Strip list markers and markdown emphasis around a line, then match `label:`
/// case-insensitively; returns what follows the colon.
fn labelled<'a>(line: &'a str, label: &str) -> Option<&'a str> {
    let line = line.trim().trim_start_matches(['-', '*', '#', '>', ' ']);
    let line = line.trim_start_matches(['*', '_']);
    let head = line.get(..label.len())?;
    if !head.eq_ignore_ascii_case(label) {
        return None;
    }
    let rest = line[label.len()..]
        .trim_start_matches(['*', '_'])
        .trim_start();
    let rest = rest.strip_prefix(':')?;
    Some(rest.trim_start_matches(['*', '_']).trim())
}

/// Read a model's answer. Accepts the contract's two lines in any case, with markdown around
/// the labels, a summary spread over several lines, and themes separated by `;` (or by `,`
/// when there is no `;`). Returns `None` for an answer that ignores the format (no `SUMMARY:`
/// line, or an empty one): the caller then gives the server's own summary rather than words it
/// cannot tell from a refusal or a preamble.
///
/// The answer comes from outside: only its first [`MAX_REPLY_BYTES`] are read, the summary is
/// cut to [`MAX_SUMMARY_CHARS`], and at most [`MAX_THEMES`] themes of at most
/// [`MAX_THEME_CHARS`] are kept, found in one linear pass.
pub fn parse_model_reply(reply: &str) -> Option<Prose> {
    let reply = prefix(reply, MAX_REPLY_BYTES);
    let mut summary: Vec<&str> = Vec::new();
    let mut themes_text: Option<&str> = None;
    let mut in_summary = false;
    for line in reply.lines() {
        if let Some(rest) = labelled(line, "SUMMARY") {
            in_summary = true;
            if !rest.is_empty() {
                summary.push(rest);
            }
        } else if let Some(rest) = labelled(line, "THEMES") {
            in_summary = false;
            themes_text = Some(rest);
        } else if in_summary && !line.trim().is_empty() {
            summary.push(line.trim());
        }
    }
    if summary.is_empty() {
        return None;
    }
    let summary = summary.join(" ");
    let summary = match summary.char_indices().nth(MAX_SUMMARY_CHARS) {
        Some((end, _)) => format!("{}…", summary[..end].trim_end()),
        None => summary,
    };
    let themes = themes_text.map_or_else(Vec::new, |t| {
        let separator = if t.contains(';') { ';' } else { ',' };
        let mut themes: Vec<String> = Vec::new();
        let mut seen = std::collections::HashSet::new();
        for theme in t.split(separator) {
            if themes.len() == MAX_THEMES {
                break;
            }
            let theme = theme.trim().trim_end_matches('.').trim();
            if theme.is_empty() || theme.chars().count() > MAX_THEME_CHARS {
                continue;
            }
            if seen.insert(theme.to_lowercase()) {
                themes.push(theme.to_owned());
            }
        }
        themes
    });
    Some(Prose {
        summary,
        themes,
        source: SummarySource::ClientModel,
    })
}

/// Fuzz entry (`fuzz/fuzz_targets/model_reply.rs`): bytes as a model's answer; whatever they
/// are, what is kept stays within the caps and has no duplicate theme.
#[doc(hidden)]
pub fn check_model_reply(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    if let Some(prose) = parse_model_reply(&text) {
        assert!(!prose.summary.is_empty());
        assert!(prose.summary.chars().count() <= MAX_SUMMARY_CHARS + 1);
        assert!(prose.themes.len() <= MAX_THEMES);
        let mut seen = std::collections::HashSet::new();
        for theme in &prose.themes {
            assert!(!theme.is_empty() && theme.chars().count() <= MAX_THEME_CHARS);
            assert!(
                seen.insert(theme.to_lowercase()),
                "duplicate theme {theme:?}"
            );
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_fuzz_corpus_replays() {
        backchannel::testing::replay_fuzz_corpus("model_reply", |bytes| {
            super::check_model_reply(bytes)
        });
    }

    use super::*;

    fn reviews(items: &[(i32, &str)]) -> Vec<ReviewText> {
        items
            .iter()
            .map(|(score, comment)| ReviewText {
                score: *score,
                comment: Some((*comment).to_owned()),
            })
            .collect()
    }

    async fn by_server(id: i64, reviews: &[ReviewText]) -> ReviewSummary {
        let asked = std::cell::Cell::new(false);
        let summary = summarize(id, reviews, async |reviews| {
            asked.set(true);
            Ok::<_, std::convert::Infallible>(server_prose(reviews))
        })
        .await
        .unwrap();
        assert_eq!(
            asked.get(),
            reviews.len() >= MIN_REVIEWS_FOR_SUMMARY,
            "prose is written only from {MIN_REVIEWS_FOR_SUMMARY} reviews on"
        );
        summary
    }

    #[tokio::test]
    async fn the_three_states_follow_the_review_count() {
        let none = by_server(7, &[]).await;
        assert_eq!((none.movie_id.as_str(), none.average_score), ("7", None));
        let two = reviews(&[(10, "great"), (9, "fine")]);
        let s = by_server(2, &two).await;
        assert_eq!((s.summary, s.average_score), (None, Some(9.5)));
        let three = reviews(&[(9, "a"), (8, "b"), (8, "c")]);
        let s = by_server(3, &three).await;
        assert_eq!(s.average_score, Some(8.33));
        assert!(s.summary.is_some());
    }

    #[test]
    fn the_server_summary_reads_the_average_and_the_words() {
        let r = reviews(&[
            (4, "The pacing was dreadful, pacing again!"),
            (5, "Dreadful acting; this movie has great music"),
            (4, "Music saved it. Very long"),
        ]);
        let prose = server_prose(&r);
        assert_eq!(
            prose.summary,
            "Reviewers respond unfavorably overall, averaging 4.3 out of 10."
        );
        assert_eq!(
            prose.themes,
            vec!["dreadful", "music", "pacing", "acting", "saved"],
            "words most reviews use first; filler such as 'again' and 'great' left out"
        );
        let split = server_prose(&reviews(&[(7, "x"), (7, "y"), (7, "z")]));
        assert_eq!(
            split.summary,
            "Reviewers are split, averaging 7.0 out of 10."
        );
        let good = server_prose(&reviews(&[(8, "x"), (7, "y"), (7, "z")]));
        assert!(
            good.summary
                .starts_with("Reviewers respond favorably overall, averaging 7.3")
        );
    }

    #[test]
    fn the_reader_forgives_case_markdown_and_separators() {
        let p = parse_model_reply("summary: Loved it.\nthemes: hope; friendship; hope").unwrap();
        assert_eq!(p.summary, "Loved it.");
        assert_eq!(p.themes, vec!["hope", "friendship"]);
        let p = parse_model_reply(
            "Here you go:\n**Summary:** Tense and\nbeautiful.\n\n**Themes:** dread, isolation.",
        )
        .unwrap();
        assert_eq!(p.summary, "Tense and beautiful.");
        assert_eq!(p.themes, vec!["dread", "isolation"]);
        // An answer that ignores the format is not read as a summary.
        assert_eq!(parse_model_reply("Just prose, no labels."), None);
        assert_eq!(parse_model_reply("I can't help with that."), None);
        assert_eq!(parse_model_reply("   "), None);
        assert_eq!(parse_model_reply("THEMES: a; b"), None);
    }

    #[test]
    fn an_oversized_answer_is_read_only_up_to_the_caps() {
        let themes: Vec<String> = (0..140_000).map(|i| format!("theme number {i}")).collect();
        let reply = format!(
            "SUMMARY: {}\nTHEMES: {}",
            "word ".repeat(10_000),
            themes.join("; ")
        );
        assert!(reply.len() > 900_000);
        let prose = parse_model_reply(&reply).unwrap();
        assert!(prose.summary.chars().count() <= MAX_SUMMARY_CHARS + 1);
        assert_eq!(
            prose.themes.len(),
            0,
            "the themes line is past the bytes read"
        );
        let few = format!("SUMMARY: ok\nTHEMES: {}", themes[..100].join("; "));
        assert_eq!(parse_model_reply(&few).unwrap().themes.len(), MAX_THEMES);
        let long = format!("SUMMARY: ok\nTHEMES: {}; short", "x".repeat(500));
        assert_eq!(parse_model_reply(&long).unwrap().themes, vec!["short"]);
        // Multi-byte text is cut at a character boundary.
        let wide = format!("SUMMARY: {}", "é".repeat(MAX_REPLY_BYTES));
        assert!(parse_model_reply(&wide).is_some());
    }

    #[test]
    fn the_prompt_lists_every_review() {
        let text = sampling_prompt(Some("Alien"), &reviews(&[(9, "tense"), (7, " slow ")]));
        assert!(text.contains("SUMMARY:") && text.contains("THEMES:"));
        assert!(
            text.contains("from 1 (worst) to 10 (best)"),
            "the score scale"
        );
        assert!(text.contains("- score 9: tense\n- score 7: slow\n"));
    }
}
