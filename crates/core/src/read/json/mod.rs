//! A borrowed JSON tree for the small nested values of a turn (critic,
//! activation log, intent verdict, tool calls): strings borrowed from the
//! line where they have no escapes, objects as small vectors in key order.
//! Cheaper than `serde_json::Value`, whose objects are B-trees of owned
//! keys, and it keeps what messages need (how a number was written).

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, Deserializer, MapAccess, Unexpected, Visitor};
use serde::Deserialize;
use serde_json::Value;

pub mod fast;

/// A nested JSON value with borrowed strings and small vectors (cheaper
/// than `serde_json::Value`, whose objects are B-trees of owned keys).
///
/// `repr(u64)` keeps the tag apart from the payload: with the default layout
/// the tag shared a byte with the number's kind, and every move copied the
/// payload from an odd offset, stalling store-to-load forwarding (a tenth
/// of a replay's time in the reader).
#[derive(Debug, PartialEq)]
#[repr(u64)]
pub enum Node<'de> {
    Null,
    Bool(bool),
    Num(f64, Unexpected<'static>),
    Str(Cow<'de, str>),
    Seq(Vec<Node<'de>>),
    Map(Vec<(Cow<'de, str>, Node<'de>)>),
}

impl<'de> Node<'de> {
    pub fn get(&self, key: &str) -> Option<&Node<'de>> {
        match self {
            Node::Map(m) => m.iter().rev().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    pub fn describe(&self) -> String {
        match self {
            Node::Null => "null".into(),
            Node::Bool(b) => b.to_string(),
            Node::Num(_, u) => describe_unexpected(*u),
            Node::Str(s) => describe(&Value::String(s.to_string())),
            Node::Seq(_) => "an array".into(),
            Node::Map(_) => "an object".into(),
        }
    }

    /// The node holding its own strings.
    pub fn into_owned(self) -> Node<'static> {
        let own = |s: Cow<'_, str>| Cow::Owned(s.into_owned());
        match self {
            Node::Null => Node::Null,
            Node::Bool(b) => Node::Bool(b),
            Node::Num(x, u) => Node::Num(x, u),
            Node::Str(s) => Node::Str(own(s)),
            Node::Seq(v) => Node::Seq(v.into_iter().map(Node::into_owned).collect()),
            Node::Map(m) => Node::Map(
                m.into_iter()
                    .map(|(k, v)| (own(k), v.into_owned()))
                    .collect(),
            ),
        }
    }

    /// Python truthiness (for tool names).
    pub fn is_falsy(&self) -> bool {
        match self {
            Node::Null => true,
            Node::Bool(b) => !b,
            Node::Num(x, _) => *x == 0.0,
            Node::Str(s) => s.is_empty(),
            Node::Seq(v) => v.is_empty(),
            Node::Map(m) => m.is_empty(),
        }
    }
}

/// Whether `text` is one JSON value the traffic format holds (no `1e400`,
/// no lone surrogate): the fast reader's check, and `serde_json`'s where
/// that one is not sure.
pub fn holds(text: &str) -> bool {
    fast::check(text).is_ok() || serde_json::from_str::<Node>(text).is_ok()
}

impl<'de> Deserialize<'de> for Node<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Node<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_unit<E>(self) -> Result<Node<'de>, E> {
                Ok(Node::Null)
            }
            fn visit_bool<E>(self, b: bool) -> Result<Node<'de>, E> {
                Ok(Node::Bool(b))
            }
            fn visit_u64<E>(self, n: u64) -> Result<Node<'de>, E> {
                Ok(Node::Num(n as f64, Unexpected::Unsigned(n)))
            }
            fn visit_i64<E>(self, n: i64) -> Result<Node<'de>, E> {
                Ok(Node::Num(n as f64, Unexpected::Signed(n)))
            }
            fn visit_f64<E>(self, x: f64) -> Result<Node<'de>, E> {
                Ok(Node::Num(x, Unexpected::Float(x)))
            }
            fn visit_borrowed_str<E>(self, s: &'de str) -> Result<Node<'de>, E> {
                Ok(Node::Str(Cow::Borrowed(s)))
            }
            fn visit_str<E>(self, s: &str) -> Result<Node<'de>, E> {
                Ok(Node::Str(Cow::Owned(s.to_string())))
            }
            fn visit_string<E>(self, s: String) -> Result<Node<'de>, E> {
                Ok(Node::Str(Cow::Owned(s)))
            }
            fn visit_seq<A: de::SeqAccess<'de>>(self, mut a: A) -> Result<Node<'de>, A::Error> {
                let mut v = Vec::new();
                while let Some(x) = a.next_element()? {
                    v.push(x);
                }
                Ok(Node::Seq(v))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<Node<'de>, A::Error> {
                let mut v = Vec::new();
                while let Some(k) = a.next_key::<Node<'de>>()? {
                    let Node::Str(k) = k else {
                        unreachable!("JSON keys are strings")
                    };
                    v.push((k, a.next_value()?));
                }
                Ok(Node::Map(v))
            }
        }
        d.deserialize_any(V)
    }
}

impl<'v> Node<'v> {
    /// The same tree, borrowed from a `serde_json::Value`.
    pub fn from_value(v: &'v Value) -> Node<'v> {
        match v {
            Value::Null => Node::Null,
            Value::Bool(b) => Node::Bool(*b),
            Value::Number(n) => {
                let u = if let Some(u) = n.as_u64() {
                    Unexpected::Unsigned(u)
                } else if let Some(i) = n.as_i64() {
                    Unexpected::Signed(i)
                } else {
                    Unexpected::Float(n.as_f64().unwrap_or(f64::NAN))
                };
                Node::Num(n.as_f64().unwrap_or(f64::NAN), u)
            }
            Value::String(s) => Node::Str(Cow::Borrowed(s)),
            Value::Array(a) => Node::Seq(a.iter().map(Node::from_value).collect()),
            Value::Object(o) => Node::Map(
                o.iter()
                    .map(|(k, v)| (Cow::Borrowed(k.as_str()), Node::from_value(v)))
                    .collect(),
            ),
        }
    }
}

/// How a value looks, for messages: `got "high"`, `got an array`.
pub fn describe(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => {
            let mut s = s.clone();
            if s.chars().count() > 40 {
                s = s.chars().take(40).collect::<String>() + "…";
            }
            serde_json::to_string(&s).unwrap()
        }
        Value::Array(_) => "an array".into(),
        Value::Object(_) => "an object".into(),
    }
}

pub fn describe_unexpected(u: Unexpected<'_>) -> String {
    match u {
        Unexpected::Str(s) => describe(&Value::String(s.to_string())),
        Unexpected::Bool(b) => b.to_string(),
        Unexpected::Unsigned(n) => n.to_string(),
        Unexpected::Signed(n) => n.to_string(),
        // Debug is the shortest text that reads back to the same f64, in
        // exponent form when large (`1.797e308`, not 309 digits).
        Unexpected::Float(x) => format!("{x:?}"),
        Unexpected::Unit | Unexpected::Option => "null".into(),
        Unexpected::Seq => "an array".into(),
        Unexpected::Map => "an object".into(),
        other => other.to_string(),
    }
}
