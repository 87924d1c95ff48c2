//! Fencing for a job's own DynamoDB writes (docs/design.md §3, guarantee 2): a
//! destination item remembers the highest fence that wrote it, and refuses
//! a write carrying a lower one. A run that lost its lease while paused and
//! wakes up after a newer run wrote cannot overwrite the newer data: the
//! refusal comes from DynamoDB, not from the stale worker's goodwill.
//!
//! ```no_run
//! # use aws_sdk_dynamodb::{Client, types::AttributeValue};
//! # use cronslot_dynamodb::fence_condition;
//! # async fn example(client: Client, fence: u64) -> Result<(), Box<dyn std::error::Error>> {
//! let put = client
//!     .put_item()
//!     .table_name("reports")
//!     .item("id", AttributeValue::S("2026-01-05".into()))
//!     .item("total", AttributeValue::N("42".into()));
//! // Adds `fence = <fence>` to the item and the condition
//! // `attribute_not_exists(#cronslot_fence) OR #cronslot_fence <= :cronslot_fence`.
//! fence_condition("fence", fence).apply_to_put_item(put).send().await?;
//! # Ok(()) }
//! ```
//!
//! A write from a superseded run then fails with
//! `ConditionalCheckFailedException`. Equal fences pass, so a run may
//! repeat its own write.

use std::collections::HashMap;

use aws_sdk_dynamodb::operation::delete_item::builders::DeleteItemFluentBuilder;
use aws_sdk_dynamodb::operation::put_item::builders::PutItemFluentBuilder;
use aws_sdk_dynamodb::operation::update_item::builders::UpdateItemFluentBuilder;
use aws_sdk_dynamodb::types::AttributeValue;
use aws_sdk_dynamodb::types::builders::{DeleteBuilder, PutBuilder, UpdateBuilder};

/// The expression attribute name standing for the fence attribute.
pub const FENCE_NAME: &str = "#cronslot_fence";
/// The expression attribute value holding the run's fence.
pub const FENCE_VALUE: &str = ":cronslot_fence";

/// A condition refusing a write whose fence is lower than the stored one,
/// as an expression with its placeholders (distinctive names, so they do
/// not collide with the caller's own).
#[derive(Debug, Clone, PartialEq)]
pub struct FenceCondition {
    /// The destination item's number attribute that holds the fence.
    pub attribute: String,
    /// The run's fence.
    pub fence: u64,
    /// `attribute_not_exists(#cronslot_fence) OR #cronslot_fence <= :cronslot_fence`
    pub expression: String,
    /// The expression attribute names: [`FENCE_NAME`] → `attribute`.
    pub names: HashMap<String, String>,
    /// The expression attribute values: [`FENCE_VALUE`] → the fence.
    pub values: HashMap<String, AttributeValue>,
}

/// The fencing condition for `attribute` (a number attribute of the
/// destination item) and this run's fence.
pub fn fence_condition(attribute: &str, fence: u64) -> FenceCondition {
    FenceCondition {
        attribute: attribute.to_string(),
        fence,
        expression: format!("attribute_not_exists({FENCE_NAME}) OR {FENCE_NAME} <= {FENCE_VALUE}"),
        names: HashMap::from([(FENCE_NAME.to_string(), attribute.to_string())]),
        values: HashMap::from([(
            FENCE_VALUE.to_string(),
            AttributeValue::N(fence.to_string()),
        )]),
    }
}

impl FenceCondition {
    /// The fence as the value to store in the fenced attribute.
    pub fn value(&self) -> AttributeValue {
        AttributeValue::N(self.fence.to_string())
    }

    /// `existing AND fence`, keeping a condition the caller already set.
    pub fn and(&self, existing: Option<&str>) -> String {
        match existing.map(str::trim).filter(|e| !e.is_empty()) {
            Some(e) => format!("({e}) AND ({})", self.expression),
            None => self.expression.clone(),
        }
    }

    /// Adds the fence to an update expression's SET clause (creating the
    /// clause if there is none), so the item records the fence that wrote
    /// it.
    pub fn set_in(&self, update_expression: Option<&str>) -> String {
        let assignment = format!("{FENCE_NAME} = {FENCE_VALUE}");
        let Some(expr) = update_expression.map(str::trim).filter(|e| !e.is_empty()) else {
            return format!("SET {assignment}");
        };
        // Attribute names in an expression are placeholders or plain
        // names that are not reserved words, so a bare `SET` word is the
        // clause keyword.
        let mut out = String::with_capacity(expr.len() + assignment.len() + 8);
        let mut inserted = false;
        for (i, word) in expr.split(' ').enumerate() {
            if i > 0 {
                out.push(' ');
            }
            out.push_str(word);
            if !inserted && word.eq_ignore_ascii_case("SET") {
                out.push(' ');
                out.push_str(&assignment);
                out.push(',');
                inserted = true;
            }
        }
        if !inserted {
            out.push_str(" SET ");
            out.push_str(&assignment);
        }
        out
    }

    /// A `PutItem` that stores the fence in the item and refuses to replace
    /// an item written by a newer fence.
    pub fn apply_to_put_item(&self, b: PutItemFluentBuilder) -> PutItemFluentBuilder {
        let condition = self.and(b.get_condition_expression().as_deref());
        self.names_and_values(
            b.item(&self.attribute, self.value())
                .condition_expression(condition),
            PutItemFluentBuilder::expression_attribute_names,
            PutItemFluentBuilder::expression_attribute_values,
        )
    }

    /// An `UpdateItem` that sets the fence and refuses to update an item
    /// written by a newer fence.
    pub fn apply_to_update_item(&self, b: UpdateItemFluentBuilder) -> UpdateItemFluentBuilder {
        let condition = self.and(b.get_condition_expression().as_deref());
        let update = self.set_in(b.get_update_expression().as_deref());
        self.names_and_values(
            b.condition_expression(condition).update_expression(update),
            UpdateItemFluentBuilder::expression_attribute_names,
            UpdateItemFluentBuilder::expression_attribute_values,
        )
    }

    /// A `DeleteItem` refused when a newer fence wrote the item.
    pub fn apply_to_delete_item(&self, b: DeleteItemFluentBuilder) -> DeleteItemFluentBuilder {
        let condition = self.and(b.get_condition_expression().as_deref());
        self.names_and_values(
            b.condition_expression(condition),
            DeleteItemFluentBuilder::expression_attribute_names,
            DeleteItemFluentBuilder::expression_attribute_values,
        )
    }

    /// The same for a `Put` inside `TransactWriteItems` (see
    /// [`DynamoStore::put_with`](super::DynamoStore::put_with)).
    pub fn apply_to_put(&self, b: PutBuilder) -> PutBuilder {
        let condition = self.and(b.get_condition_expression().as_deref());
        self.names_and_values(
            b.item(&self.attribute, self.value())
                .condition_expression(condition),
            PutBuilder::expression_attribute_names,
            PutBuilder::expression_attribute_values,
        )
    }

    /// The same for an `Update` inside `TransactWriteItems`.
    pub fn apply_to_update(&self, b: UpdateBuilder) -> UpdateBuilder {
        let condition = self.and(b.get_condition_expression().as_deref());
        let update = self.set_in(b.get_update_expression().as_deref());
        self.names_and_values(
            b.condition_expression(condition).update_expression(update),
            UpdateBuilder::expression_attribute_names,
            UpdateBuilder::expression_attribute_values,
        )
    }

    /// The same for a `Delete` inside `TransactWriteItems`.
    pub fn apply_to_delete(&self, b: DeleteBuilder) -> DeleteBuilder {
        let condition = self.and(b.get_condition_expression().as_deref());
        self.names_and_values(
            b.condition_expression(condition),
            DeleteBuilder::expression_attribute_names,
            DeleteBuilder::expression_attribute_values,
        )
    }

    fn names_and_values<B>(
        &self,
        mut b: B,
        name: fn(B, String, String) -> B,
        value: fn(B, String, AttributeValue) -> B,
    ) -> B {
        for (k, v) in &self.names {
            b = name(b, k.clone(), v.clone());
        }
        for (k, v) in &self.values {
            b = value(b, k.clone(), v.clone());
        }
        b
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn condition_and_placeholders() {
        let c = fence_condition("status", 7);
        assert_eq!(
            c.expression,
            "attribute_not_exists(#cronslot_fence) OR #cronslot_fence <= :cronslot_fence"
        );
        assert_eq!(c.names.get(FENCE_NAME).map(String::as_str), Some("status"));
        assert_eq!(
            c.values.get(FENCE_VALUE),
            Some(&AttributeValue::N("7".into()))
        );
        assert_eq!(
            c.and(Some("attribute_exists(#id)")),
            format!("(attribute_exists(#id)) AND ({})", c.expression)
        );
        assert_eq!(c.and(Some("  ")), c.expression);
    }

    #[test]
    fn fence_joins_the_set_clause() {
        let c = fence_condition("f", 1);
        assert_eq!(c.set_in(None), "SET #cronslot_fence = :cronslot_fence");
        assert_eq!(
            c.set_in(Some("SET #a = :a")),
            "SET #cronslot_fence = :cronslot_fence, #a = :a"
        );
        assert_eq!(
            c.set_in(Some("REMOVE #b set #a = :a")),
            "REMOVE #b set #cronslot_fence = :cronslot_fence, #a = :a"
        );
        assert_eq!(
            c.set_in(Some("ADD #n :one")),
            "ADD #n :one SET #cronslot_fence = :cronslot_fence"
        );
    }
}
