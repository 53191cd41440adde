//! `compute_confidence` and `detect_sensitive_hit` over a recorded graph
//! activation log, as symfonic's `confidence.py` computes them.
//!
//! The log is validated and reduced once, when the turn is parsed: the
//! confidence does not depend on the config, and the sensitive-tag search
//! only needs each node's effective tag list.

use serde_json::Value;

use crate::json::Node;

/// The parts of an `activation_log` the gates read.
#[derive(Clone, Debug, PartialEq)]
pub struct ActivationLog {
    /// `compute_confidence(log)`.
    pub confidence: f64,
    /// Per activated node, in order: its string tags (`node.tags`, or
    /// `node.properties.tags` when that is missing or empty). Non-string
    /// tags can never equal a configured tag and are left out.
    pub node_tags: Vec<Vec<String>>,
}

/// The cold-start confidence: no log, or no activated nodes.
pub const COLD_CONFIDENCE: f64 = 0.5;

fn number(v: Option<&Node>, what: impl Fn() -> String) -> Result<f64, String> {
    match v {
        None | Some(Node::Null) => Ok(0.0),
        Some(Node::Num(x, _)) if x.is_finite() => Ok(*x),
        Some(Node::Num(..)) => Err(format!("{} is not a finite number", what())),
        Some(other) => Err(format!(
            "{} must be a number, got {}",
            what(),
            other.describe()
        )),
    }
}

/// `mean(values)` as Python's `sum(xs) / len(xs)`: summed left to right.
fn mean(xs: impl Iterator<Item = f64>) -> (f64, usize) {
    let mut sum = 0.0;
    let mut n = 0;
    for x in xs {
        sum += x;
        n += 1;
    }
    (if n == 0 { 0.0 } else { sum / n as f64 }, n)
}

fn array<'n, 'v>(log: &'n Node<'v>, key: &str) -> Result<&'n [Node<'v>], String> {
    match log.get(key) {
        None | Some(Node::Null) => Ok(&[]),
        Some(Node::Seq(a)) => Ok(a),
        Some(other) => Err(format!(
            "activation_log.{key} must be an array or null, got {}",
            other.describe()
        )),
    }
}

fn string_tags(v: Option<&Node>, what: impl Fn() -> String) -> Result<Vec<String>, String> {
    match v {
        None | Some(Node::Null) => Ok(Vec::new()),
        Some(Node::Seq(a)) => Ok(a
            .iter()
            .filter_map(|t| match t {
                Node::Str(s) => Some(s.to_string()),
                _ => None,
            })
            .collect()),
        Some(other) => Err(format!(
            "{} must be an array, got {}",
            what(),
            other.describe()
        )),
    }
}

impl ActivationLog {
    /// Validate and reduce a recorded log; `null` is no log.
    pub fn from_value(v: &Value) -> Result<Option<ActivationLog>, String> {
        ActivationLog::from_node(&Node::from_value(v))
    }

    /// As [`ActivationLog::from_value`], from the parser's borrowed tree.
    pub fn from_node(log: &Node) -> Result<Option<ActivationLog>, String> {
        match log {
            Node::Null => return Ok(None),
            Node::Map(_) => {}
            other => {
                return Err(format!(
                    "activation_log must be an object or null, got {}",
                    other.describe()
                ))
            }
        };
        let nodes = array(log, "activated_nodes")?;
        let mut scores = Vec::with_capacity(nodes.len());
        let mut node_tags = Vec::with_capacity(nodes.len());
        for (i, node) in nodes.iter().enumerate() {
            if !matches!(node, Node::Map(_)) {
                return Err(format!(
                    "activation_log.activated_nodes[{i}] must be an object, got {}",
                    node.describe()
                ));
            }
            scores.push(number(node.get("score"), || {
                format!("activation_log.activated_nodes[{i}].score")
            })?);
            let props = match node.get("properties") {
                None | Some(Node::Null) => None,
                Some(p @ Node::Map(_)) => Some(p),
                Some(other) => {
                    return Err(format!(
                        "activation_log.activated_nodes[{i}].properties must be an object, got {}",
                        other.describe()
                    ))
                }
            };
            let own = string_tags(node.get("tags"), || {
                format!("activation_log.activated_nodes[{i}].tags")
            })?;
            let own_empty = match node.get("tags") {
                Some(Node::Seq(a)) => a.is_empty(),
                _ => true,
            };
            let tags = if own_empty {
                string_tags(props.and_then(|p| p.get("tags")), || {
                    format!("activation_log.activated_nodes[{i}].properties.tags")
                })?
            } else {
                own
            };
            node_tags.push(tags);
        }
        let paths = array(log, "inference_paths")?.len();
        let edges = array(log, "traversed_edges")?;
        let mut weights = Vec::with_capacity(edges.len());
        for (i, edge) in edges.iter().enumerate() {
            if !matches!(edge, Node::Map(_)) {
                return Err(format!(
                    "activation_log.traversed_edges[{i}] must be an object, got {}",
                    edge.describe()
                ));
            }
            weights.push(number(edge.get("weight"), || {
                format!("activation_log.traversed_edges[{i}].weight")
            })?);
        }
        let confidence = if nodes.is_empty() {
            COLD_CONFIDENCE
        } else {
            let (seed, _) = mean(scores.into_iter());
            let path = (paths as f64 / 3.0).min(1.0);
            let (w, n) = mean(weights.into_iter());
            let edge = if n == 0 { 0.0 } else { (w / 5.0).min(1.0) };
            (0.4 * seed + 0.3 * path + 0.3 * edge).clamp(0.0, 1.0)
        };
        Ok(Some(ActivationLog {
            confidence,
            node_tags,
        }))
    }

    /// `detect_sensitive_hit(log, tags)`: the first of the node's tags, in
    /// node order then tag order, that is one of `tags`.
    pub fn sensitive_hit<'s>(&'s self, tags: &[String]) -> Option<&'s str> {
        if tags.is_empty() {
            return None;
        }
        self.node_tags
            .iter()
            .flatten()
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
