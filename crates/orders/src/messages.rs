//! Every sentence the order tools say to a model or a person, in one place.

use crate::domain::{Money, Order};

/// The question `cancel_order` asks.
pub fn confirm_cancellation(order: &Order) -> String {
    format!(
        "Cancel order {} for {}? The total is {} and a refund will be started.",
        order.order_id,
        order.customer.name,
        order.total_amount.euros()
    )
}

/// The order is cancelled.
pub fn cancelled(order_id: &str, total: Money) -> String {
    format!(
        "Order {order_id} is cancelled and a refund of {} has been started.",
        total.euros()
    )
}

/// The form came back without `confirmed: true`.
pub fn not_confirmed(order_id: &str) -> String {
    format!("Order {order_id} was not cancelled: the cancellation was not confirmed.")
}

/// The question was declined: the person said no (a client that declines says the person
/// chose to, unless it says otherwise).
pub fn declined(order_id: &str) -> String {
    format!("Order {order_id} was not cancelled: you said no.")
}

/// The question was declined unseen: the client said it could not show it to anyone.
pub fn not_shown(order_id: &str) -> String {
    format!(
        "Order {order_id} was not cancelled: the question could not be shown to anyone, so \
         nobody said yes."
    )
}

/// The question was closed without an answer.
pub fn dismissed(order_id: &str) -> String {
    format!("Order {order_id} was not cancelled: the question was closed without an answer.")
}

/// Nobody answered before the question's deadline.
pub fn unanswered(order_id: &str) -> String {
    format!("Order {order_id} was not cancelled: nobody answered the question in time.")
}

/// The client cannot ask questions.
pub fn use_admin_console(order_id: &str) -> String {
    format!(
        "This client cannot ask for confirmation, and cancelling needs it. Cancel {order_id} through the \
         admin console instead."
    )
}

/// Log line after a cancellation.
pub fn cancelled_log(order_id: &str) -> String {
    format!("Cancelled {order_id}")
}

/// Log line when a recheck starts.
pub fn recheck_started(total: usize) -> String {
    format!("Rechecking {total} shipments")
}

/// Log line when an estimate moved.
pub fn estimate_updated(order_id: &str) -> String {
    format!("Updated estimate for {order_id}")
}

/// Log line when a recheck ends.
pub fn recheck_finished(changed: usize) -> String {
    format!("Finished. {changed} estimates changed.")
}

/// The recheck's result.
pub fn recheck_summary(total: usize, changed: usize) -> String {
    format!("Rechecked {total} shipments, {changed} estimates changed.")
}

/// The recheck was stopped by the client.
pub fn recheck_stopped(done: usize, total: usize, changed: usize) -> String {
    format!(
        "Recheck stopped after {done} of {total} shipments; {changed} estimates changed so far."
    )
}

/// The refund email prompt's instruction.
pub fn refund_email_prompt(order: &Order, reason: &str) -> String {
    format!(
        "Write a short email to {name} confirming that order {id} is being refunded.\n\
         Order total: {total}\n\
         Reason for the refund: {reason}\n\
         Keep it to three sentences. Apologise once. State the amount refunded ({total} euros) and \
         say the money reaches the original payment method in three to five working days. Do not \
         invent a reference number or a date.",
        name = order.customer.name,
        id = order.order_id,
        total = order.total_amount,
    )
}

/// The five refund reasons offered by completion.
pub const REFUND_REASONS: [&str; 5] = [
    "arrived damaged",
    "arrived late",
    "faulty",
    "no longer needed",
    "wrong item",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_outcome_of_the_question_reads_in_the_persons_words() {
        let id = "ORD-10002";
        assert_eq!(
            declined(id),
            "Order ORD-10002 was not cancelled: you said no."
        );
        assert_eq!(
            not_shown(id),
            "Order ORD-10002 was not cancelled: the question could not be shown to anyone, so \
             nobody said yes."
        );
        assert_eq!(
            dismissed(id),
            "Order ORD-10002 was not cancelled: the question was closed without an answer."
        );
        assert_eq!(
            unanswered(id),
            "Order ORD-10002 was not cancelled: nobody answered the question in time."
        );
        assert_eq!(
            not_confirmed(id),
            "Order ORD-10002 was not cancelled: the cancellation was not confirmed."
        );
        assert!(use_admin_console(id).starts_with("This client cannot ask for confirmation"));
        for text in [
            declined(id),
            not_shown(id),
            dismissed(id),
            unanswered(id),
            not_confirmed(id),
        ] {
            assert!(
                !text.contains("client") && !text.contains("declined"),
                "{text}"
            );
        }
    }
}
