//! The desk's replies are Markdown (the notes are, and models write it). The page gets it as
//! HTML, rendered by pulldown-cmark with raw HTML dropped and links kept only to http(s) and
//! mailto, so a note or a model cannot put script on the page; the terminal and the API's
//! `reply` get plain text.

use pulldown_cmark::{CowStr, Event, Options, Parser, Tag, TagEnd};

/// The most of a reply rendered, in bytes; longer replies are cut (at a character boundary).
pub const MAX_REPLY_BYTES: usize = 64 * 1024;

fn source(markdown: &str) -> &str {
    let mut end = markdown.len().min(MAX_REPLY_BYTES);
    while !markdown.is_char_boundary(end) {
        end -= 1;
    }
    &markdown[..end]
}

fn safe_link(url: &str) -> bool {
    let lower = url.trim().to_ascii_lowercase();
    lower.starts_with("https://") || lower.starts_with("http://") || lower.starts_with("mailto:")
}

/// `text` safe inside HTML text and attribute values.
pub fn escape(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => escaped.push_str("&amp;"),
            '<' => escaped.push_str("&lt;"),
            '>' => escaped.push_str("&gt;"),
            '"' => escaped.push_str("&quot;"),
            '\'' => escaped.push_str("&#39;"),
            c => escaped.push(c),
        }
    }
    escaped
}

/// Sanitised HTML for the page.
pub fn html(markdown: &str) -> String {
    let events =
        Parser::new_ext(source(markdown), Options::ENABLE_STRIKETHROUGH).filter_map(|event| {
            match event {
                // Raw HTML in the source is shown as text, never interpreted.
                Event::Html(raw) | Event::InlineHtml(raw) => Some(Event::Text(raw)),
                Event::Start(Tag::Link {
                    link_type,
                    dest_url,
                    title,
                    id,
                }) => Some(Event::Start(Tag::Link {
                    link_type,
                    dest_url: if safe_link(&dest_url) {
                        dest_url
                    } else {
                        CowStr::Borrowed("#")
                    },
                    title,
                    id,
                })),
                // Images could load anything from anywhere: shown as their alt text only.
                Event::Start(Tag::Image { .. }) | Event::End(TagEnd::Image) => None,
                other => Some(other),
            }
        });
    let mut out = String::new();
    pulldown_cmark::html::push_html(&mut out, events);
    out
}

/// Plain text for the terminal: emphasis and markup dropped, list items and paragraphs on
/// lines of their own.
pub fn plain(markdown: &str) -> String {
    let mut out = String::new();
    let mut lists: Vec<Option<u64>> = Vec::new();
    for event in Parser::new_ext(source(markdown), Options::ENABLE_STRIKETHROUGH) {
        match event {
            Event::Text(text) | Event::Code(text) | Event::Html(text) | Event::InlineHtml(text) => {
                out.push_str(&text)
            }
            Event::SoftBreak => out.push(' '),
            Event::HardBreak => out.push('\n'),
            Event::Start(Tag::List(start)) => lists.push(start),
            Event::End(TagEnd::List(_)) => {
                lists.pop();
            }
            Event::Start(Tag::Item) => {
                if !out.is_empty() && !out.ends_with('\n') {
                    out.push('\n');
                }
                match lists.last_mut() {
                    Some(Some(n)) => {
                        out.push_str(&format!("{n}. "));
                        *n += 1;
                    }
                    _ => out.push_str("- "),
                }
            }
            Event::End(TagEnd::Paragraph | TagEnd::Heading(_) | TagEnd::Item) => {
                if !out.ends_with('\n') {
                    out.push('\n');
                }
                if lists.is_empty() {
                    out.push('\n');
                }
            }
            _ => {}
        }
    }
    out.trim_end().to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markdown_becomes_safe_html_or_plain_text() {
        let note = "From the notes:\n\n2. **Check the window.** 60 days for Gold\n   customers.";
        let page = html(note);
        assert!(
            page.contains("<strong>Check the window.</strong>"),
            "{page}"
        );
        assert!(!page.contains("**"), "{page}");
        let text = plain(note);
        assert_eq!(
            text,
            "From the notes:\n\n2. Check the window. 60 days for Gold customers."
        );
        let hostile = "<script>alert(1)</script>\n\nSee [x](javascript:alert(1)) and \
                       ![i](http://x/y.png) and <b onclick=\"x()\">b</b>";
        let page = html(hostile);
        assert!(
            !page.contains("<script>") && !page.contains("javascript:"),
            "{page}"
        );
        assert!(!page.contains("<img") && !page.contains("<b "), "{page}");
        assert!(
            page.contains("&lt;script&gt;") && page.contains("href=\"#\""),
            "{page}"
        );
    }
}
