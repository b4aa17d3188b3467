//! The page's vocabulary, decided here and served to it (`GET /api/desk`): the order statuses
//! it shows as tabs, which of them may have a refund e-mail, the reasons it offers, and the
//! names of the events its stream carries. The page re-decides none of it.

use serde_json::{Value, json};

use crate::events::Event;

/// Order statuses, in the order the page shows them.
pub const STATUSES: [&str; 5] = ["PENDING", "PROCESSING", "SHIPPED", "DELIVERED", "CANCELLED"];

/// The statuses an order may have for a refund e-mail to be drafted.
pub const REFUNDABLE: [&str; 3] = ["SHIPPED", "DELIVERED", "CANCELLED"];

/// The reasons the page offers for a refund.
pub const REFUND_REASONS: [&str; 5] = [
    "arrived damaged",
    "arrived late",
    "faulty",
    "no longer needed",
    "wrong item",
];

/// Whether an order in `status` may have a refund e-mail.
pub fn refundable(status: &str) -> bool {
    REFUNDABLE.contains(&status)
}

/// What `GET /api/desk` answers.
pub fn desk() -> Value {
    json!({
        "statuses": STATUSES,
        "refundable": REFUNDABLE,
        "refundReasons": REFUND_REASONS,
        "events": Event::NAMES,
    })
}
