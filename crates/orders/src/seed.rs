//! The deterministic seed: 42 customers and 200 orders, derived from their index alone.

use chrono::{Days, NaiveDate, TimeZone, Utc};

use crate::domain::{
    Customer, Date, Instant, Money, Order, OrderItem, OrderStatus, Shipment, Tier,
};

/// The catalogue: product ID, name, unit price in cents.
pub const CATALOGUE: [(&str, &str, i64); 10] = [
    ("PROD-001", "Wireless Keyboard", 8999),
    ("PROD-002", "USB-C Hub", 4500),
    ("PROD-003", "Mechanical Switch Kit", 3499),
    ("PROD-004", "4K Monitor", 59900),
    ("PROD-005", "Laptop Stand", 5450),
    ("PROD-006", "Noise-Cancelling Headphones", 22900),
    ("PROD-007", "Webcam 1080p", 7825),
    ("PROD-008", "Desk Mat", 2999),
    ("PROD-009", "Portable SSD 1TB", 13400),
    ("PROD-010", "Ergonomic Mouse", 6240),
];

/// Carriers of generated shipments.
pub const CARRIERS: [&str; 4] = ["DHL", "UPS", "Royal Mail", "DPD"];

const FIRST: [&str; 21] = [
    "Ana", "Marcus", "Priya", "Tomas", "Leila", "Kenji", "Sofia", "Daniel", "Amara", "Viktor",
    "Chloe", "Rahul", "Elena", "Jonas", "Nadia", "Ibrahim", "Freya", "Mateo", "Sinead", "Kwame",
    "Ingrid",
];
const LAST: [&str; 21] = [
    "Ruiz",
    "Adeyemi",
    "Sharma",
    "Novak",
    "Haddad",
    "Watanabe",
    "Rossi",
    "Berg",
    "Okafor",
    "Petrov",
    "Dubois",
    "Nair",
    "Costa",
    "Lindqvist",
    "Karim",
    "Aziz",
    "Andersen",
    "Silva",
    "O'Brien",
    "Mensah",
    "Larsen",
];

/// How many customers and orders the seed makes.
pub const CUSTOMERS: usize = 42;
/// How many orders the seed makes.
pub const ORDERS: usize = 200;

fn customer(id: u32, first: &str, last: &str, tier: Tier) -> Customer {
    let email = format!("{first}.{last}@example.com")
        .to_lowercase()
        .replace('\'', "");
    Customer {
        customer_id: format!("CUST-{id:02}"),
        name: format!("{first} {last}"),
        email,
        tier,
    }
}

/// The 42 customers, `CUST-01` … `CUST-42`.
pub fn customers() -> Vec<Customer> {
    (1..=CUSTOMERS as u32)
        .map(|n| match n {
            42 => customer(n, "Ana", "Ruiz", Tier::Gold),
            17 => customer(n, "Marcus", "Adeyemi", Tier::Standard),
            _ => {
                let first = FIRST[((n - 1) % 21) as usize];
                let last = LAST[((5 * n) % 21) as usize];
                let tier = if n % 10 == 0 {
                    Tier::Gold
                } else if n % 3 == 0 {
                    Tier::Silver
                } else {
                    Tier::Standard
                };
                customer(n, first, last, tier)
            }
        })
        .collect()
}

fn item(product: usize, quantity: u32) -> OrderItem {
    let (id, name, cents) = CATALOGUE[product];
    OrderItem {
        product_id: id.into(),
        product_name: name.into(),
        quantity,
        unit_price: Money::from_cents(cents),
    }
}

fn date(y: i32, m: u32, d: u32) -> Date {
    NaiveDate::from_ymd_opt(y, m, d).unwrap_or_default()
}

fn instant(y: i32, m: u32, d: u32, h: u32, min: u32) -> Instant {
    Utc.with_ymd_and_hms(y, m, d, h, min, 0)
        .single()
        .unwrap_or_default()
}

fn fixed_orders(customers: &[Customer]) -> Vec<Order> {
    let ana = customers[41].clone();
    let marcus = customers[16].clone();
    let order = |id: &str,
                 status,
                 customer: &Customer,
                 items: Vec<OrderItem>,
                 created,
                 updated,
                 shipment| {
        let total_amount = items.iter().map(OrderItem::line_total).sum();
        Order {
            order_id: id.into(),
            status,
            customer: customer.clone(),
            items,
            total_amount,
            created_at: created,
            last_updated: updated,
            shipment,
        }
    };
    let ship = |carrier: &str, tracking: &str, shipped: Date, estimate: Date| {
        Some(Shipment {
            carrier: carrier.into(),
            tracking_number: tracking.into(),
            shipped_on: shipped,
            estimated_delivery: estimate,
        })
    };
    vec![
        order(
            "ORD-10001",
            OrderStatus::Shipped,
            &ana,
            vec![item(0, 1), item(1, 2)],
            instant(2026, 5, 10, 9, 0),
            instant(2026, 5, 12, 14, 30),
            ship("DHL", "DHL-88213", date(2026, 5, 12), date(2026, 5, 14)),
        ),
        order(
            "ORD-10002",
            OrderStatus::Pending,
            &marcus,
            vec![item(2, 1)],
            instant(2026, 5, 15, 16, 45),
            instant(2026, 5, 15, 16, 45),
            None,
        ),
        order(
            "ORD-10003",
            OrderStatus::Delivered,
            &ana,
            vec![item(3, 1)],
            instant(2026, 5, 1, 11, 0),
            instant(2026, 5, 8, 9, 15),
            ship("UPS", "UPS-80412", date(2026, 5, 3), date(2026, 5, 8)),
        ),
        order(
            "ORD-10004",
            OrderStatus::Delivered,
            &marcus,
            vec![item(0, 1)],
            instant(2023, 11, 14, 10, 20),
            instant(2023, 11, 20, 8, 5),
            ship(
                "Parcelforce",
                "PF-40817326",
                date(2023, 11, 15),
                date(2023, 11, 20),
            ),
        ),
    ]
}

/// The status plan for the 196 generated orders, by slot.
fn status_slots() -> Vec<OrderStatus> {
    let plan: Vec<OrderStatus> = [
        (OrderStatus::Shipped, 86),
        (OrderStatus::Delivered, 48),
        (OrderStatus::Pending, 29),
        (OrderStatus::Processing, 25),
        (OrderStatus::Cancelled, 8),
    ]
    .into_iter()
    .flat_map(|(status, n)| std::iter::repeat_n(status, n))
    .collect();
    let mut slots = vec![OrderStatus::Pending; plan.len()];
    for (k, status) in plan.into_iter().enumerate() {
        // 61 is coprime with 196, so every slot receives exactly one element.
        slots[(k * 61) % 196] = status;
    }
    slots
}

/// The 200 orders, `ORD-10001` … `ORD-10200`.
pub fn orders(customers: &[Customer]) -> Vec<Order> {
    let mut orders = fixed_orders(customers);
    let slots = status_slots();
    let start = date(2026, 1, 6);
    for i in orders.len()..ORDERS {
        let status = slots[i - 4];
        let created_day = start + Days::new(((3 * i) % 150) as u64);
        let created = created_day
            .and_hms_opt(0, 0, 0)
            .unwrap_or_default()
            .and_utc();
        let items: Vec<OrderItem> = (0..1 + i % 3)
            .map(|line| item((3 * i + line) % 10, 1 + ((i + line) % 2) as u32))
            .collect();
        let shipment = matches!(status, OrderStatus::Shipped | OrderStatus::Delivered).then(|| {
            let carrier = CARRIERS[i % 4];
            let shipped_on = created_day + Days::new(2);
            let prefix: String = carrier.chars().take(3).collect::<String>().to_uppercase();
            Shipment {
                carrier: carrier.into(),
                tracking_number: format!("{prefix}-{:05}", 80000 + i),
                shipped_on,
                estimated_delivery: shipped_on + Days::new(3 + (i % 4) as u64),
            }
        });
        orders.push(Order {
            order_id: format!("ORD-{}", 10001 + i),
            status,
            customer: customers[(i * 13) % 42].clone(),
            total_amount: items.iter().map(OrderItem::line_total).sum(),
            items,
            created_at: created,
            last_updated: created + chrono::Duration::days(2),
            shipment,
        });
    }
    orders
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;
    use crate::domain::carrier_estimate;

    fn seed() -> (Vec<Customer>, Vec<Order>) {
        let customers = customers();
        let orders = orders(&customers);
        (customers, orders)
    }

    fn find<'a>(orders: &'a [Order], id: &str) -> &'a Order {
        orders.iter().find(|o| o.order_id == id).unwrap()
    }

    #[test]
    fn there_are_42_customers_with_the_derived_tier_spread() {
        let (customers, _) = seed();
        assert_eq!(customers.len(), 42);
        let count = |tier| customers.iter().filter(|c| c.tier == tier).count();
        assert_eq!(
            (
                count(Tier::Gold),
                count(Tier::Silver),
                count(Tier::Standard)
            ),
            (5, 12, 25)
        );
        assert_eq!(customers[0].name, "Ana Watanabe");
        assert_eq!(customers[21].name, "Ana Watanabe");
        assert_eq!(customers[41].email, "ana.ruiz@example.com");
        assert_eq!(customers[16].name, "Marcus Adeyemi");
        assert!(customers.iter().all(|c| !c.email.contains('\'')));
    }

    #[test]
    fn the_status_spread_is_87_50_30_25_8() {
        let (_, orders) = seed();
        assert_eq!(orders.len(), 200);
        let mut spread: HashMap<OrderStatus, usize> = HashMap::new();
        for order in &orders {
            *spread.entry(order.status).or_default() += 1;
        }
        assert_eq!(spread[&OrderStatus::Shipped], 87);
        assert_eq!(spread[&OrderStatus::Delivered], 50);
        assert_eq!(spread[&OrderStatus::Pending], 30);
        assert_eq!(spread[&OrderStatus::Processing], 25);
        assert_eq!(spread[&OrderStatus::Cancelled], 8);
    }

    #[test]
    fn the_fixed_orders_match_the_reference() {
        let (_, orders) = seed();
        let first = find(&orders, "ORD-10001");
        assert_eq!(first.customer.name, "Ana Ruiz");
        assert_eq!(first.customer.customer_id, "CUST-42");
        assert_eq!(first.total_amount.to_string(), "179.99");
        assert_eq!(first.items.len(), 2);
        assert_eq!(
            first.shipment.as_ref().unwrap().tracking_number,
            "DHL-88213"
        );
        let second = find(&orders, "ORD-10002");
        assert_eq!(
            (second.status, second.total_amount.to_string()),
            (OrderStatus::Pending, "34.99".into())
        );
        assert!(second.shipment.is_none());
        assert_eq!(
            find(&orders, "ORD-10004")
                .shipment
                .as_ref()
                .unwrap()
                .carrier,
            "Parcelforce"
        );
    }

    #[test]
    fn the_generated_examples_match_the_derived_table() {
        let (_, orders) = seed();
        let expected = [
            (
                "ORD-10005",
                OrderStatus::Shipped,
                "CUST-11",
                "Chloe Lindqvist",
                "1232.99",
            ),
            (
                "ORD-10006",
                OrderStatus::Shipped,
                "CUST-24",
                "Priya Aziz",
                "596.23",
            ),
            (
                "ORD-10007",
                OrderStatus::Delivered,
                "CUST-37",
                "Ibrahim Silva",
                "134.00",
            ),
            (
                "ORD-10008",
                OrderStatus::Pending,
                "CUST-08",
                "Daniel Mensah",
                "124.99",
            ),
            (
                "ORD-10009",
                OrderStatus::Processing,
                "CUST-21",
                "Ingrid Ruiz",
                "590.75",
            ),
            (
                "ORD-10010",
                OrderStatus::Shipped,
                "CUST-34",
                "Elena Sharma",
                "59.98",
            ),
            (
                "ORD-10011",
                OrderStatus::Shipped,
                "CUST-05",
                "Leila Haddad",
                "179.99",
            ),
            (
                "ORD-10012",
                OrderStatus::Delivered,
                "CUST-18",
                "Mateo Rossi",
                "1710.50",
            ),
        ];
        for (id, status, customer, name, total) in expected {
            let order = find(&orders, id);
            assert_eq!(order.status, status, "{id}");
            assert_eq!(order.customer.customer_id, customer, "{id}");
            assert_eq!(order.customer.name, name, "{id}");
            assert_eq!(order.total_amount.to_string(), total, "{id}");
        }
        assert_eq!(find(&orders, "ORD-10009").customer.tier, Tier::Silver);
        assert_eq!(
            find(&orders, "ORD-10007")
                .shipment
                .as_ref()
                .unwrap()
                .tracking_number,
            "ROY-80006"
        );
    }

    #[test]
    fn the_quoted_customers_have_the_derived_orders() {
        let (_, orders) = seed();
        let of = |customer: &str| {
            let mut ids: Vec<(String, OrderStatus)> = orders
                .iter()
                .filter(|o| o.customer.customer_id == customer)
                .map(|o| (o.order_id.clone(), o.status))
                .collect();
            ids.sort();
            ids
        };
        let ids = |list: Vec<(String, OrderStatus)>| {
            list.into_iter().map(|(id, _)| id).collect::<Vec<_>>()
        };
        assert_eq!(
            ids(of("CUST-42")),
            [
                "ORD-10001",
                "ORD-10003",
                "ORD-10030",
                "ORD-10072",
                "ORD-10114",
                "ORD-10156",
                "ORD-10198"
            ]
        );
        assert_eq!(
            ids(of("CUST-17")),
            [
                "ORD-10002",
                "ORD-10004",
                "ORD-10041",
                "ORD-10083",
                "ORD-10125",
                "ORD-10167"
            ]
        );
    }

    #[test]
    fn the_carrier_moves_exactly_the_derived_13_estimates() {
        let (_, orders) = seed();
        let moved: Vec<&str> = orders
            .iter()
            .filter(|o| o.status == OrderStatus::Shipped)
            .filter(|o| {
                let shipment = o.shipment.as_ref().unwrap();
                carrier_estimate(&o.order_id, shipment) != shipment.estimated_delivery
            })
            .map(|o| o.order_id.as_str())
            .collect();
        assert_eq!(
            moved,
            [
                "ORD-10005",
                "ORD-10019",
                "ORD-10033",
                "ORD-10040",
                "ORD-10054",
                "ORD-10075",
                "ORD-10089",
                "ORD-10110",
                "ORD-10124",
                "ORD-10145",
                "ORD-10159",
                "ORD-10180",
                "ORD-10194"
            ]
        );
    }
}
