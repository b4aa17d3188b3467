//! Sentences the desk says to a person (the order service's own sentences live in its
//! `messages` module), and the one money format the desk shows: `€1,232.99`.

use serde_json::Value;

/// An amount in euros, as the order service sends it (a JSON number with two decimals):
/// the euro sign, thousands grouped, two decimals. Not a number: `€?`.
pub fn money(value: &Value) -> String {
    let Some(amount) = value.as_f64().filter(|a| a.is_finite()) else {
        return "€?".into();
    };
    let cents = (amount.abs() * 100.0).round() as u64;
    // Groups of three digits from the right: 1232 → ["1", "232"].
    let digits: Vec<char> = (cents / 100).to_string().chars().collect();
    let groups: Vec<String> = digits.rchunks(3).rev().map(String::from_iter).collect();
    let grouped = groups.join(",");
    let sign = if amount < 0.0 && cents > 0 { "-" } else { "" };
    format!("{sign}€{grouped}.{:02}", cents % 100)
}

/// The desk's first words: what it can do, and whether a model or its rules answer.
pub fn greeting(model: bool, notes: bool) -> String {
    let how = if model {
        "A language model is set up to answer, using the order service's tools (if it cannot \
         be reached, I say so)."
    } else {
        "No language model is configured, so I follow simple rules."
    };
    let notes = if notes {
        ""
    } else {
        " (The policy notes are not available in this session.)"
    };
    format!(
        "Hello! I am the support desk. {how} {}{notes}",
        crate::rules::HELP
    )
}

/// The refund email the desk drafts without a model. It promises only what the desk knows:
/// the refund is for the order's total and goes to the original payment method.
pub fn refund_email(name: &str, order_id: &str, total: &str, reason: &str) -> String {
    let reason = reason.trim().trim_end_matches('.');
    let sorry = if reason.is_empty() {
        format!("We are sorry about your order {order_id}.")
    } else if reason.starts_with("arrived") || reason.starts_with("was ") {
        format!("We are sorry that your order {order_id} {reason}.")
    } else {
        format!("We are sorry about your order {order_id} ({reason}).")
    };
    format!(
        "Dear {name},\n\n{sorry} We will refund {total} to your original payment method; once the \
         refund is processed, the money reaches you within three to five working days.\n\n\
         Kind regards,\nThe support desk"
    )
}

/// Told once a conversation: its oldest turns no longer fit the model's context.
pub fn context_trimmed(left_out: usize) -> String {
    let turns = if left_out == 1 {
        "message".to_owned()
    } else {
        format!("{left_out} messages")
    };
    format!(
        "_(This conversation is now longer than the model can read at once: it no longer sees \
         the oldest {turns}. Start a new conversation for a fresh topic.)_"
    )
}

/// What the model reads when a task it started (through a tool whose question waited for the
/// person) has ended after the chat went on: the result, and what to do with it.
pub fn task_result_for_model(result: &str) -> String {
    format!(
        "(Not the person's words: a tool call you made earlier waited for the person's answer, \
         and it has now ended. Its result: \"{result}\". Tell the person the outcome in a \
         sentence or two, from this result only.)"
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn money_is_shown_one_way() {
        assert_eq!(money(&json!(34.99)), "€34.99");
        assert_eq!(money(&json!(1232.99)), "€1,232.99");
        assert_eq!(money(&json!(1322.9)), "€1,322.90");
        assert_eq!(money(&json!(1_000_000)), "€1,000,000.00");
        assert_eq!(money(&json!("x")), "€?");
    }

    #[test]
    fn the_refund_email_promises_nothing_that_has_not_happened() {
        let email = refund_email("Ana Ruiz", "ORD-10001", "€179.99", "arrived damaged");
        assert!(email.starts_with(
            "Dear Ana Ruiz,\n\nWe are sorry that your order ORD-10001 arrived damaged."
        ));
        assert!(email.contains("We will refund €179.99"), "{email}");
        assert!(!email.contains("We have refunded"), "{email}");
        let other = refund_email("Ana Ruiz", "ORD-10001", "€179.99", "wrong size");
        assert!(
            other.contains("your order ORD-10001 (wrong size)."),
            "{other}"
        );
    }
}
