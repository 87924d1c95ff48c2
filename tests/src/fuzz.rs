//! What the fuzz tests of untrusted JSON share (a Lambda's event decoders,
//! the Durable Object's protocol): arbitrary JSON trees built from a
//! test's own leaves and keys, so that most objects carry the keys the
//! decoder looks for.

use proptest::prelude::*;
use serde_json::Value;

/// Arbitrary JSON: `leaf` values, in arrays of fewer than `max_items` and
/// objects keyed by `key`, nested up to four levels, about `size` nodes.
pub fn json_tree(
    leaf: BoxedStrategy<Value>,
    key: BoxedStrategy<String>,
    size: u32,
    max_items: usize,
) -> BoxedStrategy<Value> {
    leaf.prop_recursive(4, size, 6, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..max_items).prop_map(Value::Array),
            prop::collection::vec((key.clone(), inner), 0..6)
                .prop_map(|kv| Value::Object(kv.into_iter().collect())),
        ]
    })
    .boxed()
}
