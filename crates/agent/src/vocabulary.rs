//! The page's vocabulary, decided here and served to it (`GET /api/desk`): the order statuses
//! it shows as tabs, which of them may have a refund e-mail, the reasons it offers (the order
//! service's, asked by completion: [`crate::desk::Desk::refund_reasons`]), and the names of the
//! events its stream carries. The page re-decides none of it.

use serde_json::{Value, json};

use crate::events::Event;

/// Order statuses, in the order the page shows them.
pub const STATUSES: [&str; 5] = ["PENDING", "PROCESSING", "SHIPPED", "DELIVERED", "CANCELLED"];

/// The statuses an order may have for a refund e-mail to be drafted.
pub const REFUNDABLE: [&str; 3] = ["SHIPPED", "DELIVERED", "CANCELLED"];

/// Whether an order in `status` may have a refund e-mail.
pub fn refundable(status: &str) -> bool {
    REFUNDABLE.contains(&status)
}

/// What `GET /api/desk` answers, with the refund reasons the order service offers.
pub fn desk(refund_reasons: &[String]) -> Value {
    json!({
        "statuses": STATUSES,
        "refundable": REFUNDABLE,
        "refundReasons": refund_reasons,
        "events": Event::NAMES,
    })
}
