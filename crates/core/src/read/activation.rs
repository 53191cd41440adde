//! `compute_confidence` and `detect_sensitive_hit` over a recorded graph
//! activation log, as symfonic's `confidence.py` computes them.
//!
//! The log is validated and reduced once, when the turn is parsed: the
//! confidence does not depend on the config, and the sensitive-tag search
//! only needs each node's effective tag list.

use serde_json::Value;

use crate::read::json::Node;

/// The parts of an `activation_log` the gates read.
#[derive(Clone, Debug, PartialEq)]
pub struct ActivationLog {
    /// `compute_confidence(log)`.
    pub confidence: f64,
    /// The activated nodes' string tags, node after node (each node's
    /// `tags`, or `properties.tags` when that is missing or empty), flat:
    /// the sensitive-tag search reads them in exactly this order. Non-string
    /// tags can never equal a configured tag and are left out.
    pub tags: Vec<String>,
}

/// The cold-start confidence: no log, or no activated nodes.
pub const COLD_CONFIDENCE: f64 = 0.5;

fn number(v: Option<&Node>, what: impl Fn() -> String) -> Result<f64, super::invalid::Invalid> {
    match v {
        None | Some(Node::Null) => Ok(0.0),
        Some(Node::Num(x, _)) if x.is_finite() => Ok(*x),
        Some(Node::Num(..)) => Err(format!("{} is not a finite number", what()).into()),
        Some(other) => Err(format!("{} must be a number, got {}", what(), other.describe()).into()),
    }
}

fn array<'n, 'v>(log: &'n Node<'v>, key: &str) -> Result<&'n [Node<'v>], super::invalid::Invalid> {
    match log.get(key) {
        None | Some(Node::Null) => Ok(&[]),
        Some(Node::Seq(a)) => Ok(a),
        Some(other) => Err(format!(
            "activation_log.{key} must be an array or null, got {}",
            other.describe()
        )
        .into()),
    }
}

/// Append the string tags of `v` (an array or null) to `out`.
fn string_tags(
    v: Option<&Node>,
    what: impl Fn() -> String,
    out: &mut Vec<String>,
) -> Result<(), super::invalid::Invalid> {
    match v {
        None | Some(Node::Null) => Ok(()),
        Some(Node::Seq(a)) => {
            out.extend(a.iter().filter_map(|t| match t {
                Node::Str(s) => Some(s.to_string()),
                _ => None,
            }));
            Ok(())
        }
        Some(other) => Err(format!("{} must be an array, got {}", what(), other.describe()).into()),
    }
}

/// Activated node `i`: its score, and its string tags appended to `tags`
/// (its own `tags`, or `properties.tags` when those are missing or empty).
fn read_node(
    i: usize,
    node: &Node,
    tags: &mut Vec<String>,
) -> Result<f64, super::invalid::Invalid> {
    if !matches!(node, Node::Map(_)) {
        return Err(format!(
            "activation_log.activated_nodes[{i}] must be an object, got {}",
            node.describe()
        )
        .into());
    }
    let score = number(node.get("score"), || {
        format!("activation_log.activated_nodes[{i}].score")
    })?;
    let props = match node.get("properties") {
        None | Some(Node::Null) => None,
        Some(p @ Node::Map(_)) => Some(p),
        Some(other) => {
            return Err(format!(
                "activation_log.activated_nodes[{i}].properties must be an object, got {}",
                other.describe()
            )
            .into())
        }
    };
    let before = tags.len();
    string_tags(
        node.get("tags"),
        || format!("activation_log.activated_nodes[{i}].tags"),
        tags,
    )?;
    let own_empty = match node.get("tags") {
        Some(Node::Seq(a)) => a.is_empty(),
        _ => true,
    };
    if own_empty {
        tags.truncate(before);
        string_tags(
            props.and_then(|p| p.get("tags")),
            || format!("activation_log.activated_nodes[{i}].properties.tags"),
            tags,
        )?;
    }
    Ok(score)
}

impl ActivationLog {
    /// Validate and reduce a recorded log; `null` is no log.
    pub fn from_value(v: &Value) -> Result<Option<ActivationLog>, crate::vocab::FieldError> {
        ActivationLog::from_node(&Node::from_value(v)).map_err(|reason| crate::vocab::FieldError {
            field: "activation_log".into(),
            reason: reason.0,
        })
    }

    /// As [`ActivationLog::from_value`], from the parser's borrowed tree
    /// (the reason is a turn's, which the reader names with its line).
    pub(crate) fn from_node(log: &Node) -> Result<Option<ActivationLog>, super::invalid::Invalid> {
        match log {
            Node::Null => return Ok(None),
            Node::Map(_) => {}
            other => {
                return Err(format!(
                    "activation_log must be an object or null, got {}",
                    other.describe()
                )
                .into())
            }
        };
        let nodes = array(log, "activated_nodes")?;
        // Sums left to right as Python's `sum`, without collecting the values.
        let mut score_sum = 0.0;
        let mut tags = Vec::new();
        for (i, node) in nodes.iter().enumerate() {
            score_sum += read_node(i, node, &mut tags)?;
        }
        let paths = array(log, "inference_paths")?.len();
        let edges = array(log, "traversed_edges")?;
        let mut weight_sum = 0.0;
        for (i, edge) in edges.iter().enumerate() {
            if !matches!(edge, Node::Map(_)) {
                return Err(format!(
                    "activation_log.traversed_edges[{i}] must be an object, got {}",
                    edge.describe()
                )
                .into());
            }
            weight_sum += number(edge.get("weight"), || {
                format!("activation_log.traversed_edges[{i}].weight")
            })?;
        }
        let confidence = if nodes.is_empty() {
            COLD_CONFIDENCE
        } else {
            let seed = score_sum / nodes.len() as f64;
            let path = (paths as f64 / 3.0).min(1.0);
            let edge = if edges.is_empty() {
                0.0
            } else {
                (weight_sum / edges.len() as f64 / 5.0).min(1.0)
            };
            let sum = 0.4 * seed + 0.3 * path + 0.3 * edge;
            if sum.is_nan() {
                // Scores or weights whose sums overflow to opposite
                // infinities: no confidence a figure could rest on
                // (symfonic's `max(0.0, min(1.0, nan))` would make it 1.0).
                return Err(format!(
                    "activation_log: the confidence is not a number (the mean score is {seed}, the mean edge weight {}: sums past the range of a 64-bit float)",
                    weight_sum / edges.len().max(1) as f64
                ).into());
            }
            sum.clamp(0.0, 1.0)
        };
        Ok(Some(ActivationLog { confidence, tags }))
    }

    /// `detect_sensitive_hit(log, tags)`: the first of the node's tags, in
    /// node order then tag order, that is one of `tags`.
    pub fn sensitive_hit<'s>(&'s self, tags: &[String]) -> Option<&'s str> {
        if tags.is_empty() {
            return None;
        }
        self.tags
            .iter()
            .find(|t| tags.iter().any(|s| s == *t))
            .map(String::as_str)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn conf(v: Value) -> f64 {
        ActivationLog::from_value(&v).unwrap().unwrap().confidence
    }

    /// Sums that overflow to opposite infinities give NaN, which would
    /// decide the gate ("NaN >= 0.6"): the log is invalid instead.
    #[test]
    fn a_confidence_that_is_not_a_number_is_an_error() {
        let log = json!({
            "activated_nodes": [{"score": 1e308}, {"score": 1e308}],
            "traversed_edges": [{"weight": -1e308}, {"weight": -1e308}],
        });
        let e = ActivationLog::from_value(&log).unwrap_err();
        assert!(
            e.reason.contains("not a number") && e.field == "activation_log",
            "{e}"
        );
        // One infinity alone is clamped, as symfonic clamps it.
        let log = json!({"activated_nodes": [{"score": 1e308}, {"score": 1e308}]});
        assert_eq!(conf(log), 1.0);
    }

    #[test]
    fn cold_logs_are_half() {
        assert_eq!(conf(json!({})), 0.5);
        assert_eq!(
            conf(json!({"activated_nodes": null, "inference_paths": [["x"]]})),
            0.5
        );
        assert_eq!(conf(json!({"activated_nodes": []})), 0.5);
    }

    #[test]
    fn sums_left_to_right_like_python() {
        let v = json!({"activated_nodes": [{"score": 0.5}, {"score": 1.5}], "inference_paths": [["a"], ["b"]], "traversed_edges": [{"weight": 2.0}, {}]});
        assert_eq!(conf(v), 0.6599999999999999);
        assert_eq!(conf(json!({"activated_nodes": [{"score": -2.0}]})), 0.0);
        assert_eq!(
            conf(
                json!({"activated_nodes": [{"score": 3.0}], "traversed_edges": [{"weight": 100.0}]})
            ),
            1.0
        );
    }

    #[test]
    fn tags_fall_back_to_properties_only_when_missing_or_empty() {
        let log = ActivationLog::from_value(&json!({"activated_nodes": [
            {"score": 0.7, "tags": ["other"], "properties": {"tags": ["pii"]}},
            {"score": 0.7, "tags": [], "properties": {"tags": ["payments"]}}
        ]}))
        .unwrap()
        .unwrap();
        assert_eq!(log.sensitive_hit(&["pii".into()]), None);
        assert_eq!(
            log.sensitive_hit(&["payments".into(), "pii".into()]),
            Some("payments")
        );
        assert_eq!(log.sensitive_hit(&[]), None);
    }

    #[test]
    fn unreadable_shapes_are_errors() {
        assert!(ActivationLog::from_value(&json!({"activated_nodes": {}})).is_err());
        assert!(ActivationLog::from_value(&json!({"activated_nodes": [1]})).is_err());
        assert!(ActivationLog::from_value(&json!({"activated_nodes": [{"score": "x"}]})).is_err());
        assert!(ActivationLog::from_value(&json!({"activated_nodes": [{"score": true}]})).is_err());
        assert!(
            ActivationLog::from_value(&json!({"activated_nodes": [{"properties": []}]})).is_err()
        );
        assert!(ActivationLog::from_value(&json!({"traversed_edges": [{"weight": "w"}]})).is_err());
        assert!(ActivationLog::from_value(&json!("log")).is_err());
    }
}
