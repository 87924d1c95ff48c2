//! Reading JSON the way cronslot writes it: a struct is always an object.
//!
//! `serde_json` also reads a struct from an array of its fields in order,
//! so every derived `Deserialize` of a struct (and of an enum's struct
//! variant) is compiled twice, once per form. Nothing cronslot writes is
//! an array where a struct belongs, and a Worker pays for the second copy
//! in its upload size (≈ 12 KB of the gzipped Worker).
//! [`from_str`] reads like `serde_json::from_str` with its errors, and
//! refuses an array where a struct belongs ("invalid type: sequence,
//! expected struct …").
//!
//! The wrapper forwards everything else unchanged: each value is read by
//! `serde_json`, the wrapper only asks for a map instead of a struct.

use std::fmt;

use serde::de::{
    self, Deserialize, DeserializeSeed, Deserializer, EnumAccess, MapAccess, SeqAccess,
    VariantAccess, Visitor,
};

/// Reads `T` from JSON text, structs only from objects (see the module
/// documentation); errors are `serde_json`'s.
pub fn from_str<'a, T: Deserialize<'a>>(text: &'a str) -> Result<T, serde_json::Error> {
    let mut de = serde_json::Deserializer::from_str(text);
    let value = T::deserialize(Objects(&mut de))?;
    de.end()?;
    Ok(value)
}

/// A deserializer that reads structs as maps.
struct Objects<D>(D);

/// A visitor whose accesses and nested values read through [`Objects`].
struct Wrap<V>(V);

macro_rules! forward {
    ($($method:ident)*) => {
        $(
            fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, D::Error> {
                self.0.$method(Wrap(visitor))
            }
        )*
    };
}

impl<'de, D: Deserializer<'de>> Deserializer<'de> for Objects<D> {
    type Error = D::Error;

    forward! {
        deserialize_any deserialize_bool deserialize_i8 deserialize_i16 deserialize_i32
        deserialize_i64 deserialize_i128 deserialize_u8 deserialize_u16 deserialize_u32
        deserialize_u64 deserialize_u128 deserialize_f32 deserialize_f64 deserialize_char
        deserialize_str deserialize_string deserialize_bytes deserialize_byte_buf
        deserialize_option deserialize_unit deserialize_seq deserialize_map
        deserialize_identifier deserialize_ignored_any
    }

    fn deserialize_unit_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        self.0.deserialize_unit_struct(name, Wrap(visitor))
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        self.0.deserialize_newtype_struct(name, Wrap(visitor))
    }

    fn deserialize_tuple<V: Visitor<'de>>(
        self,
        len: usize,
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        self.0.deserialize_tuple(len, Wrap(visitor))
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        len: usize,
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        self.0.deserialize_tuple_struct(name, len, Wrap(visitor))
    }

    /// The one change: a struct is read as a map.
    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        self.0.deserialize_map(Wrap(visitor))
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        name: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        self.0.deserialize_enum(name, variants, Wrap(visitor))
    }

    fn is_human_readable(&self) -> bool {
        self.0.is_human_readable()
    }
}

macro_rules! visit {
    ($($method:ident: $ty:ty)*) => {
        $(
            fn $method<E: de::Error>(self, v: $ty) -> Result<V::Value, E> {
                self.0.$method(v)
            }
        )*
    };
}

impl<'de, V: Visitor<'de>> Visitor<'de> for Wrap<V> {
    type Value = V::Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.expecting(f)
    }

    visit! {
        visit_bool: bool visit_i8: i8 visit_i16: i16 visit_i32: i32 visit_i64: i64
        visit_i128: i128 visit_u8: u8 visit_u16: u16 visit_u32: u32 visit_u64: u64
        visit_u128: u128 visit_f32: f32 visit_f64: f64 visit_char: char
        visit_str: &str visit_borrowed_str: &'de str visit_string: String
        visit_bytes: &[u8] visit_borrowed_bytes: &'de [u8] visit_byte_buf: Vec<u8>
    }

    fn visit_none<E: de::Error>(self) -> Result<V::Value, E> {
        self.0.visit_none()
    }

    fn visit_unit<E: de::Error>(self) -> Result<V::Value, E> {
        self.0.visit_unit()
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<V::Value, D::Error> {
        self.0.visit_some(Objects(d))
    }

    fn visit_newtype_struct<D: Deserializer<'de>>(self, d: D) -> Result<V::Value, D::Error> {
        self.0.visit_newtype_struct(Objects(d))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<V::Value, A::Error> {
        self.0.visit_seq(Wrap(seq))
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<V::Value, A::Error> {
        self.0.visit_map(Wrap(map))
    }

    fn visit_enum<A: EnumAccess<'de>>(self, data: A) -> Result<V::Value, A::Error> {
        self.0.visit_enum(Wrap(data))
    }
}

/// A seed whose value reads through [`Objects`].
struct Seed<S>(S);

impl<'de, S: DeserializeSeed<'de>> DeserializeSeed<'de> for Seed<S> {
    type Value = S::Value;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<S::Value, D::Error> {
        self.0.deserialize(Objects(d))
    }
}

impl<'de, A: SeqAccess<'de>> SeqAccess<'de> for Wrap<A> {
    type Error = A::Error;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, A::Error> {
        self.0.next_element_seed(Seed(seed))
    }

    fn size_hint(&self) -> Option<usize> {
        self.0.size_hint()
    }
}

impl<'de, A: MapAccess<'de>> MapAccess<'de> for Wrap<A> {
    type Error = A::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, A::Error> {
        self.0.next_key_seed(Seed(seed))
    }

    fn next_value_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<T::Value, A::Error> {
        self.0.next_value_seed(Seed(seed))
    }

    fn size_hint(&self) -> Option<usize> {
        self.0.size_hint()
    }
}

impl<'de, A: EnumAccess<'de>> EnumAccess<'de> for Wrap<A> {
    type Error = A::Error;
    type Variant = Wrap<A::Variant>;

    fn variant_seed<T: DeserializeSeed<'de>>(
        self,
        seed: T,
    ) -> Result<(T::Value, Wrap<A::Variant>), A::Error> {
        let (value, variant) = self.0.variant_seed(Seed(seed))?;
        Ok((value, Wrap(variant)))
    }
}

/// A struct variant's fields, read as a map.
struct StructVariant<V>(V);

impl<'de, V: Visitor<'de>> DeserializeSeed<'de> for StructVariant<V> {
    type Value = V::Value;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<V::Value, D::Error> {
        d.deserialize_map(Wrap(self.0))
    }
}

impl<'de, A: VariantAccess<'de>> VariantAccess<'de> for Wrap<A> {
    type Error = A::Error;

    fn unit_variant(self) -> Result<(), A::Error> {
        self.0.unit_variant()
    }

    fn newtype_variant_seed<T: DeserializeSeed<'de>>(self, seed: T) -> Result<T::Value, A::Error> {
        self.0.newtype_variant_seed(Seed(seed))
    }

    fn tuple_variant<V: Visitor<'de>>(self, len: usize, visitor: V) -> Result<V::Value, A::Error> {
        self.0.tuple_variant(len, Wrap(visitor))
    }

    /// A struct variant's value is read as a map, as a struct's is.
    fn struct_variant<V: Visitor<'de>>(
        self,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, A::Error> {
        self.0.newtype_variant_seed(StructVariant(visitor))
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use serde::Deserialize;

    use super::from_str;

    #[derive(Debug, PartialEq, Deserialize)]
    struct Point {
        x: i32,
        #[serde(default)]
        y: Option<String>,
    }

    #[derive(Debug, PartialEq, Deserialize)]
    #[serde(rename_all = "snake_case")]
    enum Shape {
        Dot,
        Named(String),
        Line { from: Point, to: Point },
        Pair(i32, i32),
    }

    #[test]
    fn reads_what_serde_json_reads_from_objects() {
        let text = r#"[{"x": 1}, {"x": 2, "y": "b", "z": [1, {"q": null}]}]"#;
        let points: Vec<Point> = from_str(text).unwrap();
        assert_eq!(points, serde_json::from_str::<Vec<Point>>(text).unwrap());
        let text = r#"["dot", {"named": "n"}, {"line": {"from": {"x": 1}, "to": {"x": 2, "y": null}}}, {"pair": [3, 4]}]"#;
        let shapes: Vec<Shape> = from_str(text).unwrap();
        assert_eq!(shapes, serde_json::from_str::<Vec<Shape>>(text).unwrap());
        let text = r#"{"a": {"x": -1}, "b": {"x": 0}}"#;
        let map: BTreeMap<String, Point> = from_str(text).unwrap();
        assert_eq!(
            map,
            serde_json::from_str::<BTreeMap<String, Point>>(text).unwrap()
        );
        let raw: Vec<&serde_json::value::RawValue> = from_str(r#"[{"x": 1}, [2]]"#).unwrap();
        assert_eq!(raw[0].get(), r#"{"x": 1}"#);
        assert_eq!(raw[1].get(), "[2]");
    }

    #[test]
    fn errors_are_serde_jsons() {
        for text in [
            r#"{"x": "1"}"#,
            r#"{"y": "b"}"#,
            r#"{"x": 1} x"#,
            r#"{"x": 1"#,
        ] {
            assert_eq!(
                from_str::<Point>(text).unwrap_err().to_string(),
                serde_json::from_str::<Point>(text).unwrap_err().to_string(),
                "{text}"
            );
        }
        let text = r#"{"line": {"from": {"x": 1}}}"#;
        assert_eq!(
            from_str::<Shape>(text).unwrap_err().to_string(),
            serde_json::from_str::<Shape>(text).unwrap_err().to_string()
        );
    }

    #[test]
    fn a_struct_is_never_an_array() {
        assert!(serde_json::from_str::<Point>("[1]").is_ok());
        let e = from_str::<Point>("[1]").unwrap_err().to_string();
        assert!(
            e.starts_with("invalid type: sequence, expected struct Point"),
            "{e}"
        );
        assert!(from_str::<Shape>(r#"{"line": [{"x": 1}, {"x": 2}]}"#).is_err());
    }
}
