//! The offline planner: maps the common support requests to tool calls without a language
//! model. It understands order lookups, a customer's orders, orders by status, cancelling,
//! refreshing delivery estimates, and refund emails.

use regex_lite::Regex;

/// What the planner decided to do with a message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Plan {
    /// Call a tool of the order service.
    Tool {
        /// Tool name.
        name: &'static str,
        /// Its arguments.
        arguments: serde_json::Value,
    },
    /// Draft a refund email for an order.
    RefundEmail {
        /// The order.
        order_id: String,
        /// Why it is refunded.
        reason: String,
    },
    /// Answer a policy question from one of the notes.
    Policy {
        /// The note's file name.
        note: &'static str,
        /// Read the archived notes (rules before 2024) instead of the current ones.
        archive: bool,
        /// The question, to pick the passage that answers it.
        question: String,
    },
    /// Answer with this text.
    Say(String),
}

/// What the planner can do, for its first reply and for messages it does not understand.
pub const HELP: &str = "I can look up an order (\"where is ORD-10001?\"), list a customer's \
orders (\"orders for CUST-42\"), list orders by status (\"pending orders\"), cancel an order \
(\"cancel ORD-10002\"), refresh delivery estimates (\"recheck shipments\"), draft a refund \
email (\"refund email for ORD-10001, arrived damaged\") and answer policy questions from the \
notes (\"how long can a Gold customer return an item?\").";

/// The most of a message the planner reads, in bytes; the rest is ignored.
pub const MAX_MESSAGE_BYTES: usize = 4 * 1024;

fn pattern(
    cell: &'static std::sync::OnceLock<Option<Regex>>,
    source: &str,
) -> Option<&'static Regex> {
    cell.get_or_init(|| Regex::new(source).ok()).as_ref()
}

fn order_id(text: &str) -> Option<String> {
    static ORDER: std::sync::OnceLock<Option<Regex>> = std::sync::OnceLock::new();
    pattern(&ORDER, r"(?i)\bORD-?(\d{5})\b")?
        .captures(text)
        .map(|c| format!("ORD-{}", &c[1]))
}

fn customer_id(text: &str) -> Option<String> {
    static CUSTOMER: std::sync::OnceLock<Option<Regex>> = std::sync::OnceLock::new();
    pattern(&CUSTOMER, r"(?i)\bCUST-?(\d{1,2})\b")?
        .captures(text)
        .map(|c| format!("CUST-{:0>2}", &c[1]))
}

/// `text` cut to at most `max` bytes, at a character boundary.
fn prefix(text: &str, max: usize) -> &str {
    let mut end = text.len().min(max);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

fn status(text: &str) -> Option<&'static str> {
    let lower = text.to_lowercase();
    [
        ("pending", "PENDING"),
        ("processing", "PROCESSING"),
        ("shipped", "SHIPPED"),
        ("delivered", "DELIVERED"),
        ("cancelled", "CANCELLED"),
        ("canceled", "CANCELLED"),
    ]
    .into_iter()
    .find(|(word, _)| lower.contains(word))
    .map(|(_, status)| status)
}

fn policy(question: &str, lower: &str) -> Option<Plan> {
    let archive = ["2023", "archive", "old rules", "before 2024"]
        .iter()
        .any(|w| lower.contains(w));
    let topics: [(&[&str], &'static str, &'static str); 3] = [
        (
            &["escalat", "team lead", "supervisor", "manager"],
            "escalation.md",
            "escalation.md",
        ),
        (
            &[
                "claim",
                "carrier",
                "dhl",
                "ups",
                "royal mail",
                "dpd",
                "parcelforce",
                "hermes",
            ],
            "carriers.md",
            "carriers.md",
        ),
        (
            &[
                "return",
                "refund",
                "postage",
                "window",
                "restocking",
                "policy",
            ],
            "refunds-process.md",
            "refunds.md",
        ),
    ];
    let (_, current, archived) = topics
        .iter()
        .find(|(words, _, _)| words.iter().any(|w| lower.contains(w)))?;
    Some(Plan::Policy {
        note: if archive { archived } else { current },
        archive,
        question: question.to_owned(),
    })
}

/// Whether the message asks what the desk can do (whatever order is open in the UI).
fn is_help(lower: &str) -> bool {
    let words: Vec<&str> = lower
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    matches!(
        words.as_slice(),
        ["help"] | ["hi"] | ["hello"] | ["hey"] | ["help", "me"] | ["what", "can", "you", "do"]
    ) || lower.trim() == "?"
}

/// Plan a message. `selected` is the order the person has open in the UI, if any.
pub fn plan(message: &str, selected: Option<&str>) -> Plan {
    let message = prefix(message, MAX_MESSAGE_BYTES);
    let lower = message.to_lowercase();
    if is_help(&lower) {
        return Plan::Say(HELP.into());
    }
    let order = order_id(message).or_else(|| selected.map(str::to_owned));
    if lower.contains("recheck")
        || lower.contains("refresh")
        || (lower.contains("estimate") && lower.contains("deliver"))
    {
        return Plan::Tool {
            name: "recheck_shipments",
            arguments: serde_json::json!({}),
        };
    }
    if lower.contains("refund") && (lower.contains("email") || lower.contains("mail")) {
        return match order {
            Some(order_id) => {
                let reason = [
                    "arrived damaged",
                    "arrived late",
                    "faulty",
                    "no longer needed",
                    "wrong item",
                ]
                .into_iter()
                .find(|r| lower.contains(r))
                .unwrap_or("arrived damaged")
                .to_owned();
                Plan::RefundEmail { order_id, reason }
            }
            None => {
                Plan::Say("Which order is the refund for? Order IDs look like ORD-10001.".into())
            }
        };
    }
    if lower.contains("cancel") && !lower.contains("cancelled orders") {
        return match order {
            Some(order_id) => Plan::Tool {
                name: "cancel_order",
                arguments: serde_json::json!({"orderId": order_id}),
            },
            None => Plan::Say("Which order should I cancel? Order IDs look like ORD-10002.".into()),
        };
    }
    if let Some(customer) = customer_id(message) {
        return Plan::Tool {
            name: "get_customer_orders",
            arguments: serde_json::json!({"customerId": customer}),
        };
    }
    if order_id(message).is_none()
        && let Some(status) = status(message)
        && (lower.contains("order") || lower.contains("list") || lower.contains("which"))
    {
        return Plan::Tool {
            name: "get_orders_by_status",
            arguments: serde_json::json!({"status": status}),
        };
    }
    if order_id(message).is_none()
        && let Some(policy) = policy(message, &lower)
    {
        return policy;
    }
    if let Some(order_id) = order {
        return Plan::Tool {
            name: "get_order",
            arguments: serde_json::json!({"orderId": order_id}),
        };
    }
    Plan::Say(format!("I did not understand that. {HELP}"))
}

/// Fuzz entry (`fuzz/fuzz_targets/rules_message.rs`): bytes as a message, optionally followed by
/// a NUL and the selected order; whatever they are, the plan's tool arguments are an object and
/// any order it names has the ORD-nnnnn form (or is the selected order).
#[doc(hidden)]
pub fn check_message(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let (message, selected) = match text.split_once('\0') {
        Some((message, selected)) => (message, Some(selected)),
        None => (text.as_ref(), None),
    };
    let well_formed = |id: &str| {
        Some(id) == selected
            || (id.len() == 9
                && id.starts_with("ORD-")
                && id[4..].bytes().all(|b| b.is_ascii_digit()))
    };
    match plan(message, selected) {
        Plan::Tool { arguments, .. } => {
            assert!(arguments.is_object());
            if let Some(id) = arguments.get("orderId").and_then(|v| v.as_str()) {
                assert!(well_formed(id), "{id:?}");
            }
        }
        Plan::RefundEmail { order_id, .. } => assert!(well_formed(&order_id), "{order_id:?}"),
        Plan::Policy { .. } | Plan::Say(_) => {}
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_fuzz_corpus_replays() {
        backchannel::testing::replay_fuzz_corpus("rules_message", |bytes| {
            super::check_message(bytes)
        });
    }

    use super::*;

    fn tool(message: &str) -> (&'static str, serde_json::Value) {
        match plan(message, None) {
            Plan::Tool { name, arguments } => (name, arguments),
            other => panic!("{message}: {other:?}"),
        }
    }

    #[test]
    fn common_requests_map_to_tools() {
        assert_eq!(
            tool("Where is ord-10001?"),
            ("get_order", serde_json::json!({"orderId": "ORD-10001"}))
        );
        assert_eq!(
            tool("Please cancel ORD-10002"),
            ("cancel_order", serde_json::json!({"orderId": "ORD-10002"}))
        );
        assert_eq!(
            tool("orders for cust-7"),
            (
                "get_customer_orders",
                serde_json::json!({"customerId": "CUST-07"})
            )
        );
        assert_eq!(
            tool("which orders are pending?"),
            (
                "get_orders_by_status",
                serde_json::json!({"status": "PENDING"})
            )
        );
        assert_eq!(tool("refresh delivery estimates").0, "recheck_shipments");
    }

    #[test]
    fn the_selected_order_fills_in_a_missing_id() {
        assert_eq!(
            plan("cancel this one", Some("ORD-10008")),
            Plan::Tool {
                name: "cancel_order",
                arguments: serde_json::json!({"orderId": "ORD-10008"})
            }
        );
        assert_eq!(
            plan("draft a refund email, it arrived late", Some("ORD-10001")),
            Plan::RefundEmail {
                order_id: "ORD-10001".into(),
                reason: "arrived late".into()
            }
        );
    }

    #[test]
    fn policy_questions_pick_a_note() {
        assert!(matches!(
            plan("How long is the returns window for Gold customers?", None),
            Plan::Policy {
                note: "refunds-process.md",
                archive: false,
                ..
            }
        ));
        assert!(matches!(
            plan("What was the restocking fee in 2023?", None),
            Plan::Policy {
                note: "refunds.md",
                archive: true,
                ..
            }
        ));
        assert!(matches!(
            plan("How long do we have to claim with DHL?", None),
            Plan::Policy {
                note: "carriers.md",
                ..
            }
        ));
        assert!(matches!(
            plan("When do I escalate to a team lead?", None),
            Plan::Policy {
                note: "escalation.md",
                ..
            }
        ));
    }

    #[test]
    fn anything_else_gets_the_help_text() {
        assert!(matches!(plan("hello", None), Plan::Say(text) if text.contains("ORD-10001")));
        assert!(matches!(plan("cancel it", None), Plan::Say(text) if text.contains("Which order")));
    }
}
