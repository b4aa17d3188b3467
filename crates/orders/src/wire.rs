//! The order as the tools and the REST API show it: the JSON shape and its schema, kept apart
//! from the domain types so that a change of either is a decision, not an accident. Built from
//! a domain [`Order`] and never read back into one.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::domain::{self, Date, Instant, Money, Order, OrderStatus, Tier};

/// An order's status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
#[schemars(rename = "OrderStatus")]
pub enum StatusView {
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

impl From<OrderStatus> for StatusView {
    fn from(status: OrderStatus) -> Self {
        match status {
            OrderStatus::Pending => StatusView::Pending,
            OrderStatus::Processing => StatusView::Processing,
            OrderStatus::Shipped => StatusView::Shipped,
            OrderStatus::Delivered => StatusView::Delivered,
            OrderStatus::Cancelled => StatusView::Cancelled,
        }
    }
}

/// A customer's loyalty tier.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
#[schemars(rename = "Tier")]
pub enum TierView {
    /// Longer returns window, immediate replacements.
    Gold,
    /// The middle tier.
    Silver,
    /// Everyone else.
    Standard,
}

impl From<Tier> for TierView {
    fn from(tier: Tier) -> Self {
        match tier {
            Tier::Gold => TierView::Gold,
            Tier::Silver => TierView::Silver,
            Tier::Standard => TierView::Standard,
        }
    }
}

/// A customer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "Customer")]
pub struct CustomerView {
    /// `CUST-NN`
    pub customer_id: String,
    /// Full name.
    pub name: String,
    /// Email address.
    pub email: String,
    /// Loyalty tier.
    pub tier: TierView,
}

/// One line of an order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "OrderItem")]
pub struct ItemView {
    /// `PROD-NNN`
    pub product_id: String,
    /// Product name.
    pub product_name: String,
    /// How many.
    #[schemars(schema_with = "positive_integer")]
    pub quantity: u32,
    /// Price of one, in euros.
    #[serde(with = "euros")]
    #[schemars(schema_with = "euros::schema")]
    pub unit_price: Money,
}

/// Carrier details of a shipped or delivered order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "Shipment")]
pub struct ShipmentView {
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
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "Order")]
pub struct OrderView {
    /// `ORD-NNNNN`
    pub order_id: String,
    /// Current status.
    pub status: StatusView,
    /// Who placed it.
    pub customer: CustomerView,
    /// What was ordered.
    pub items: Vec<ItemView>,
    /// Order total in euros.
    #[serde(with = "euros")]
    #[schemars(schema_with = "euros::schema")]
    pub total_amount: Money,
    /// When it was placed.
    pub created_at: Instant,
    /// When it last changed.
    pub last_updated: Instant,
    /// Carrier details, for shipped and delivered orders only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shipment: Option<ShipmentView>,
}

impl From<Order> for OrderView {
    fn from(order: Order) -> Self {
        let domain::Customer {
            customer_id,
            name,
            email,
            tier,
        } = order.customer;
        OrderView {
            order_id: order.order_id,
            status: order.status.into(),
            customer: CustomerView {
                customer_id,
                name,
                email,
                tier: tier.into(),
            },
            items: order
                .items
                .into_iter()
                .map(|item| ItemView {
                    product_id: item.product_id,
                    product_name: item.product_name,
                    quantity: item.quantity,
                    unit_price: item.unit_price,
                })
                .collect(),
            total_amount: order.total_amount,
            created_at: order.created_at,
            last_updated: order.last_updated,
            shipment: order.shipment.map(|s| ShipmentView {
                carrier: s.carrier,
                tracking_number: s.tracking_number,
                shipped_on: s.shipped_on,
                estimated_delivery: s.estimated_delivery,
            }),
        }
    }
}

fn positive_integer(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({ "type": "integer", "minimum": 1 })
}

/// An amount of [`Money`] on the wire: a JSON number of euros with at most two decimals.
mod euros {
    use serde::{Deserialize, Deserializer, Serializer};

    use crate::domain::Money;

    /// The f64 is made only here, at the edge, from exact cents; every amount below 2^53
    /// cents prints back as the same two-decimal value.
    pub(super) fn serialize<S: Serializer>(
        money: &Money,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        serializer.serialize_f64(money.cents() as f64 / 100.0)
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Money, D::Error> {
        let euros = f64::deserialize(deserializer)?;
        Ok(Money::from_cents((euros * 100.0).round() as i64))
    }

    pub(super) fn schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "number",
            "description": "An amount in euros with two decimals"
        })
    }
}
