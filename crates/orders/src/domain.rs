//! The order domain: statuses, orders and their parts, money, and the rules that need no
//! storage. Nothing here knows about MCP, HTTP or SQL.

use std::fmt;

/// An order's ID as a caller gave it, with the surrounding blanks taken off: read once at the
/// edge (a tool's arguments, a URL), and taken as it is by everything below. Any text is an ID;
/// one that names no order is [`OrderError`](crate::service::OrderError)'s `NotFound`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct OrderId<'a>(&'a str);

impl<'a> OrderId<'a> {
    /// The ID in `text` (`" ORD-10001 "` is `ORD-10001`).
    pub fn new(text: &'a str) -> Self {
        OrderId(text.trim())
    }

    /// The ID's text.
    pub fn as_str(self) -> &'a str {
        self.0
    }
}

/// An order's status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum OrderStatus {
    /// Placed, not yet being prepared.
    Pending,
    /// Being prepared in the warehouse.
    Processing,
    /// Handed to the carrier.
    Shipped,
    /// Arrived.
    Delivered,
    /// Cancelled before it shipped.
    Cancelled,
}

impl OrderStatus {
    /// Every status, in lifecycle order.
    pub const ALL: [OrderStatus; 5] = [
        OrderStatus::Pending,
        OrderStatus::Processing,
        OrderStatus::Shipped,
        OrderStatus::Delivered,
        OrderStatus::Cancelled,
    ];

    /// The status as stored and shown: `PENDING` …
    pub fn as_str(self) -> &'static str {
        match self {
            OrderStatus::Pending => "PENDING",
            OrderStatus::Processing => "PROCESSING",
            OrderStatus::Shipped => "SHIPPED",
            OrderStatus::Delivered => "DELIVERED",
            OrderStatus::Cancelled => "CANCELLED",
        }
    }

    /// Only orders that have not left the warehouse can be cancelled.
    pub fn is_cancellable(self) -> bool {
        matches!(self, OrderStatus::Pending | OrderStatus::Processing)
    }

    /// Parse a status the way a person types it: surrounding space and case do not matter.
    pub fn parse(input: &str) -> Result<OrderStatus, StatusParseError> {
        let wanted = input.trim().to_uppercase();
        if wanted.is_empty() {
            return Err(StatusParseError::Blank);
        }
        OrderStatus::ALL
            .into_iter()
            .find(|status| status.as_str() == wanted)
            .ok_or(StatusParseError::Unknown(input.trim().to_owned()))
    }
}

impl fmt::Display for OrderStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The valid statuses as a list, `[PENDING, PROCESSING, SHIPPED, DELIVERED, CANCELLED]`.
pub fn status_list() -> String {
    let names: Vec<&str> = OrderStatus::ALL.iter().map(|s| s.as_str()).collect();
    format!("[{}]", names.join(", "))
}

/// Why a status did not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StatusParseError {
    /// Nothing (or only spaces) was given.
    #[error("A status is required. Must be one of: {list}", list = status_list())]
    Blank,
    /// Something that is not a status was given.
    #[error("Invalid status '{0}'. Must be one of: {list}", list = status_list())]
    Unknown(String),
}

/// An amount of euros, kept exactly as whole cents.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub struct Money(i64);

impl Money {
    /// From whole cents.
    pub const fn from_cents(cents: i64) -> Self {
        Money(cents)
    }

    /// Whole cents.
    pub const fn cents(self) -> i64 {
        self.0
    }

    /// `self × quantity`.
    pub fn times(self, quantity: u32) -> Money {
        Money(self.0 * i64::from(quantity))
    }
}

impl std::ops::Add for Money {
    type Output = Money;
    fn add(self, other: Money) -> Money {
        Money(self.0 + other.0)
    }
}

impl std::iter::Sum for Money {
    fn sum<I: Iterator<Item = Money>>(iter: I) -> Money {
        iter.fold(Money::default(), |a, b| a + b)
    }
}

impl fmt::Display for Money {
    /// Two decimals, no currency sign: `179.99`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let sign = if self.0 < 0 { "-" } else { "" };
        let cents = self.0.unsigned_abs();
        write!(f, "{sign}{}.{:02}", cents / 100, cents % 100)
    }
}

impl Money {
    /// For people: the euro sign, thousands grouped, two decimals: `€1,232.99`.
    pub fn euros(&self) -> String {
        let sign = if self.0 < 0 { "-" } else { "" };
        let cents = self.0.unsigned_abs();
        let whole = (cents / 100).to_string();
        let mut grouped = String::new();
        for (i, digit) in whole.chars().enumerate() {
            if i > 0 && (whole.len() - i).is_multiple_of(3) {
                grouped.push(',');
            }
            grouped.push(digit);
        }
        format!("{sign}€{grouped}.{:02}", cents % 100)
    }
}

/// A customer's loyalty tier.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tier {
    /// Longer returns window, immediate replacements.
    Gold,
    /// The middle tier.
    Silver,
    /// Everyone else.
    Standard,
}

impl Tier {
    /// As stored: `GOLD`, `SILVER`, `STANDARD`.
    pub fn as_str(self) -> &'static str {
        match self {
            Tier::Gold => "GOLD",
            Tier::Silver => "SILVER",
            Tier::Standard => "STANDARD",
        }
    }

    /// Parse a stored tier.
    pub fn parse(s: &str) -> Option<Tier> {
        [Tier::Gold, Tier::Silver, Tier::Standard]
            .into_iter()
            .find(|t| t.as_str() == s)
    }
}

/// A customer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Customer {
    /// `CUST-NN`
    pub customer_id: String,
    /// Full name.
    pub name: String,
    /// Email address.
    pub email: String,
    /// Loyalty tier.
    pub tier: Tier,
}

/// One line of an order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OrderItem {
    /// `PROD-NNN`
    pub product_id: String,
    /// Product name.
    pub product_name: String,
    /// How many.
    pub quantity: u32,
    /// Price of one, in euros.
    pub unit_price: Money,
}

impl OrderItem {
    /// Unit price × quantity.
    pub fn line_total(&self) -> Money {
        self.unit_price.times(self.quantity)
    }
}

/// A calendar date, `YYYY-MM-DD`.
pub type Date = chrono::NaiveDate;
/// An instant, serialised as ISO 8601 UTC.
pub type Instant = chrono::DateTime<chrono::Utc>;

/// Carrier details of a shipped or delivered order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shipment {
    /// Carrier name.
    pub carrier: String,
    /// Carrier's tracking number.
    pub tracking_number: String,
    /// When it left the warehouse.
    pub shipped_on: Date,
    /// When the carrier expects to deliver it.
    pub estimated_delivery: Date,
}

/// An order, as the API and the tools show it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Order {
    /// `ORD-NNNNN`
    pub order_id: String,
    /// Current status.
    pub status: OrderStatus,
    /// Who placed it.
    pub customer: Customer,
    /// What was ordered.
    pub items: Vec<OrderItem>,
    /// Order total in euros.
    pub total_amount: Money,
    /// When it was placed.
    pub created_at: Instant,
    /// When it last changed.
    pub last_updated: Instant,
    /// Carrier details, for shipped and delivered orders only.
    pub shipment: Option<Shipment>,
}

/// What a cancellation did: the order, the refund it started, and when.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cancellation {
    /// The cancelled order.
    pub order_id: String,
    /// The refund started: the order's total.
    pub refund: Money,
    /// When it was cancelled (the order's new `last_updated`).
    pub at: Instant,
}

/// Java's `String.hashCode`, which the reference's simulated carrier keys on.
pub fn java_string_hash(s: &str) -> i32 {
    s.encode_utf16().fold(0i32, |h, unit| {
        h.wrapping_mul(31).wrapping_add(i32::from(unit))
    })
}

/// The simulated carrier's answer for a shipped order: its estimate from the shipping date.
/// Pure and idempotent: it depends only on the order ID and the shipping date.
pub fn carrier_estimate(order_id: &str, shipment: &Shipment) -> Date {
    let hash = java_string_hash(order_id).unsigned_abs();
    if hash.is_multiple_of(7) {
        shipment.shipped_on + chrono::Days::new(7 + u64::from(hash % 2))
    } else {
        shipment.estimated_delivery
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_parsing_trims_and_ignores_case() {
        assert_eq!(OrderStatus::parse("  shipped "), Ok(OrderStatus::Shipped));
        assert_eq!(OrderStatus::parse("Cancelled"), Ok(OrderStatus::Cancelled));
    }

    #[test]
    fn status_parse_messages_name_the_valid_statuses() {
        assert_eq!(
            OrderStatus::parse("  ").unwrap_err().to_string(),
            "A status is required. Must be one of: [PENDING, PROCESSING, SHIPPED, DELIVERED, CANCELLED]"
        );
        assert_eq!(
            OrderStatus::parse("lost").unwrap_err().to_string(),
            "Invalid status 'lost'. Must be one of: [PENDING, PROCESSING, SHIPPED, DELIVERED, CANCELLED]"
        );
    }

    #[test]
    fn only_pending_and_processing_are_cancellable() {
        let cancellable: Vec<_> = OrderStatus::ALL
            .into_iter()
            .filter(|s| s.is_cancellable())
            .collect();
        assert_eq!(
            cancellable,
            vec![OrderStatus::Pending, OrderStatus::Processing]
        );
    }

    #[test]
    fn money_is_exact_and_prints_two_decimals() {
        let total = Money::from_cents(8999) + Money::from_cents(4500).times(2);
        assert_eq!(total.to_string(), "179.99");
        assert_eq!(total.euros(), "€179.99");
        assert_eq!(Money::from_cents(123_299).euros(), "€1,232.99");
        assert_eq!(Money::from_cents(100_000_050).euros(), "€1,000,000.50");
        assert_eq!(Money::from_cents(-5).euros(), "-€0.05");
        assert_eq!(Money::from_cents(4500).to_string(), "45.00");
    }

    #[test]
    fn java_hash_matches_known_values() {
        assert_eq!(java_string_hash(""), 0);
        assert_eq!(java_string_hash("a"), 97);
        assert_eq!(java_string_hash("hello"), 99162322);
        // "Aa" and "BB" collide in Java.
        assert_eq!(java_string_hash("Aa"), java_string_hash("BB"));
    }
}
