//! Finding the passage of a note that answers a question: the note is cut into passages (list
//! items, paragraphs), each under the heading it sits in, and the passage sharing the most
//! distinctive words with the question wins (words weighed by how few passages use them, so
//! "Gold" counts for more than "customer"). A few question words stand for the words that
//! answer them ("how long" is answered in days).

use std::collections::{HashMap, HashSet};

/// One passage of a note.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Passage {
    /// The section heading it sits under, if any (without the `#`s).
    pub heading: Option<String>,
    /// The passage's Markdown, list marker included.
    pub text: String,
}

impl Passage {
    /// The passage as Markdown without its list marker, with its heading as a lead-in.
    pub fn markdown(&self) -> String {
        let text = strip_marker(&self.text).replace('\n', " ");
        match &self.heading {
            Some(heading) => format!("**{heading}:** {text}"),
            None => text,
        }
    }
}

fn strip_marker(text: &str) -> &str {
    let trimmed = text.trim_start();
    if let Some(rest) = trimmed
        .strip_prefix("- ")
        .or_else(|| trimmed.strip_prefix("* "))
    {
        return rest;
    }
    let digits = trimmed.bytes().take_while(u8::is_ascii_digit).count();
    if digits > 0
        && let Some(rest) = trimmed[digits..].strip_prefix(". ")
    {
        return rest;
    }
    trimmed
}

fn is_item(line: &str) -> bool {
    let line = line.trim_start();
    line.starts_with("- ")
        || line.starts_with("* ")
        || (line.bytes().take_while(u8::is_ascii_digit).count() > 0
            && line
                .trim_start_matches(|c: char| c.is_ascii_digit())
                .starts_with(". "))
}

/// Cut a note into passages. The title (the first `#` heading) is not a section heading.
pub fn passages(note: &str) -> Vec<Passage> {
    let mut out = Vec::new();
    let mut heading: Option<String> = None;
    let mut current: Vec<&str> = Vec::new();
    let flush = |current: &mut Vec<&str>, heading: &Option<String>, out: &mut Vec<Passage>| {
        if !current.is_empty() {
            out.push(Passage {
                heading: heading.clone(),
                text: current.join("\n"),
            });
            current.clear();
        }
    };
    for line in note.lines() {
        let trimmed = line.trim();
        if trimmed.is_empty() {
            flush(&mut current, &heading, &mut out);
        } else if let Some(title) = trimmed.strip_prefix('#') {
            flush(&mut current, &heading, &mut out);
            let level = 1 + title.bytes().take_while(|b| *b == b'#').count();
            if level > 1 {
                heading = Some(title.trim_start_matches('#').trim().to_owned());
            }
        } else if is_item(line) {
            flush(&mut current, &heading, &mut out);
            current.push(trimmed);
        } else {
            current.push(trimmed);
        }
    }
    flush(&mut current, &heading, &mut out);
    out
}

const STOP_WORDS: &[&str] = &[
    "a", "an", "the", "and", "or", "of", "to", "in", "on", "for", "is", "are", "was", "were", "be",
    "can", "could", "do", "does", "did", "how", "what", "which", "who", "whom", "when", "why",
    "with", "it", "its", "an", "i", "we", "you", "they", "my", "our", "your", "their", "there",
    "this", "that", "these", "those", "at", "by", "from", "as", "if", "than", "then", "so", "not",
    "no", "yes", "any", "all", "about", "into", "over", "under", "item", "items", "order",
];

/// Question words and the words that answer them.
const ANSWERED_BY: &[(&str, &[&str])] = &[
    ("long", &["day", "days", "week", "weeks", "window"]),
    ("soon", &["day", "days", "working"]),
    ("much", &["fee", "pay", "pays", "cost", "%"]),
    ("cost", &["fee", "pay", "pays", "%"]),
    ("fee", &["fee", "%"]),
];

/// A word cut to a stem shared by its plural and simple verb forms.
fn stem(word: &str) -> String {
    let word = word.to_lowercase();
    for suffix in ["ing", "es", "s"] {
        if let Some(stem) = word.strip_suffix(suffix)
            && stem.len() >= 3
        {
            return stem.to_owned();
        }
    }
    word
}

fn words(text: &str) -> HashSet<String> {
    text.split(|c: char| !(c.is_alphanumeric() || c == '%'))
        .filter(|w| !w.is_empty())
        .map(|w| w.to_lowercase())
        .filter(|w| !STOP_WORDS.contains(&w.as_str()))
        .map(|w| stem(&w))
        .collect()
}

/// The passage of `note` that best answers `question`, or `None` when no passage shares a
/// word with it.
pub fn best_passage(note: &str, question: &str) -> Option<Passage> {
    ranked(&[("", note)], question, 1)
        .into_iter()
        .next()
        .map(|(_, passage)| passage)
}

/// The `k` passages of `notes` (name, text) that best answer `question`, best first, each
/// with the name of its note; passages sharing no word with the question are left out.
pub fn ranked<'a>(notes: &[(&'a str, &str)], question: &str, k: usize) -> Vec<(&'a str, Passage)> {
    let all: Vec<(&'a str, Passage)> = notes
        .iter()
        .flat_map(|(name, text)| passages(text).into_iter().map(move |p| (*name, p)))
        .collect();
    let per_passage: Vec<HashSet<String>> = all
        .iter()
        .map(|(_, p)| {
            let mut w = words(&p.text);
            if let Some(heading) = &p.heading {
                w.extend(words(heading));
            }
            w
        })
        .collect();
    let mut document_frequency: HashMap<&str, usize> = HashMap::new();
    for passage in &per_passage {
        for word in passage {
            *document_frequency.entry(word.as_str()).or_default() += 1;
        }
    }
    let mut wanted = words(question);
    let lower = question.to_lowercase();
    for (word, answers) in ANSWERED_BY {
        if lower
            .split(|c: char| !c.is_alphanumeric())
            .any(|w| w == *word)
        {
            wanted.extend(answers.iter().map(|a| stem(a)));
        }
    }
    let n = all.len().max(1) as f64;
    let score = |passage: &HashSet<String>| -> f64 {
        wanted
            .iter()
            .filter(|w| passage.contains(*w))
            .map(|w| {
                let df = document_frequency.get(w.as_str()).copied().unwrap_or(1) as f64;
                (1.0 + n / df).ln()
            })
            .sum()
    };
    let mut scored: Vec<(f64, usize)> = per_passage
        .iter()
        .enumerate()
        .map(|(i, passage)| (score(passage), i))
        .filter(|(s, _)| *s > 0.0)
        .collect();
    // Best first; equal scores keep the notes' order.
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    scored
        .into_iter()
        .take(k)
        .map(|(_, i)| all[i].clone())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn note(name: &str) -> String {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../..")
            .join(name);
        std::fs::read_to_string(path).unwrap()
    }

    #[test]
    fn the_passage_that_answers_the_question_is_found() {
        let refunds = note("support-kb/refunds-process.md");
        let gold = best_passage(&refunds, "How long can a Gold customer return an item?").unwrap();
        assert!(gold.text.contains("60 days for Gold tier"), "{gold:?}");
        let postage = best_passage(&refunds, "Who pays the return postage?").unwrap();
        assert!(postage.text.contains("return postage"), "{postage:?}");
        let archive = note("support-kb-archive/refunds.md");
        let fee = best_passage(&archive, "What was the restocking fee in 2023?").unwrap();
        assert!(fee.text.contains("15% restocking fee"), "{fee:?}");
        let escalation = note("support-kb/escalation.md");
        let chargeback = best_passage(&escalation, "The customer mentions a chargeback").unwrap();
        assert_eq!(chargeback.heading.as_deref(), Some("To a team lead"));
        assert!(
            chargeback
                .markdown()
                .starts_with("**To a team lead:** Any mention")
        );
        assert_eq!(best_passage(&refunds, "zebra"), None);
    }
}
