//! The parameter tree: every tunable and counter of a node, by dotted name.
//!
//! Components register [`Param`]s under names like `fabric.tcp0.credits` or
//! `obdfilter.OST0000.sync_journal` and remove them with [`ParamTree::unregister_prefix`]
//! when they go away. The admin service reads and sets them by glob, as `lctl` does.
//!
//! The lock is held only to look names up: getters and setters run after it is released, so a
//! slow getter never stalls a registration and a getter may itself use the tree.

use std::collections::BTreeMap;
use std::sync::{Arc, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

use crate::error::ParamError;
use crate::glob::Glob;
use crate::param::Param;

/// The most parameters one tree holds; registration beyond it fails.
pub const PARAMS_MAX: usize = 65_536;

/// The longest parameter name, in bytes.
pub const NAME_LEN_MAX: usize = 256;

/// The longest value a set may carry, in bytes (lctl's limit is a page).
pub const VALUE_LEN_MAX: usize = 4096;

/// Characters a name may not contain: glob syntax would make it unmatchable by itself, `=`
/// would break `set_param name=value`, and whitespace would break the CLI's output.
const NAME_FORBIDDEN: &[char] = &['*', '?', '[', ']', '\\', '='];

/// A parameter's name and current value, as read by [`ParamTree::get`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParamValue {
    /// The full dotted name.
    pub name: String,
    /// The value the getter returned; may span several lines.
    pub value: String,
    /// Whether the parameter can be set.
    pub writable: bool,
}

/// A parameter's name without its value, as listed by [`ParamTree::list`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParamInfo {
    /// The full dotted name.
    pub name: String,
    /// Whether the parameter can be set.
    pub writable: bool,
}

/// A thread-safe registry of parameters by dotted name. Clones share the same tree.
#[derive(Clone, Debug, Default)]
pub struct ParamTree {
    /// Name → parameter, sorted so that listings come out in name order.
    params: Arc<RwLock<BTreeMap<String, Param>>>,
}

impl ParamTree {
    /// An empty tree.
    pub fn new() -> ParamTree {
        ParamTree::default()
    }

    /// Adds `param` under `name`. Refuses malformed names, names already taken, and more than
    /// [`PARAMS_MAX`] parameters.
    pub fn register(&self, name: &str, param: Param) -> Result<(), ParamError> {
        check_name(name)?;
        let mut params = self.write();
        if params.contains_key(name) {
            return Err(ParamError::AlreadyRegistered {
                name: name.to_owned(),
            });
        }
        if params.len() >= PARAMS_MAX {
            return Err(ParamError::TreeFull {
                name: name.to_owned(),
                params_max: PARAMS_MAX,
            });
        }
        params.insert(name.to_owned(), param);
        Ok(())
    }

    /// Removes the parameter `name`; whether it was there.
    pub fn unregister(&self, name: &str) -> bool {
        self.write().remove(name).is_some()
    }

    /// Removes `prefix` and every parameter below it (`fabric.tcp0` removes
    /// `fabric.tcp0.credits` but not `fabric.tcp01.credits`); how many were removed.
    pub fn unregister_prefix(&self, prefix: &str) -> usize {
        let mut params = self.write();
        let before = params.len();
        params.retain(|name, _| {
            let below = name
                .strip_prefix(prefix)
                .is_some_and(|rest| rest.starts_with('.'));
            !(name == prefix || below)
        });
        before - params.len()
    }

    /// How many parameters are registered.
    pub fn len(&self) -> usize {
        self.read().len()
    }

    /// Whether no parameter is registered.
    pub fn is_empty(&self) -> bool {
        self.read().is_empty()
    }

    /// The name and current value of every parameter matching `pattern`, in name order.
    pub fn get(&self, pattern: &str) -> Result<Vec<ParamValue>, ParamError> {
        let matched = self.matching(pattern, Glob::matches)?;
        Ok(matched
            .into_iter()
            .map(|(name, param)| ParamValue {
                value: param.value(),
                writable: param.is_writable(),
                name,
            })
            .collect())
    }

    /// Sets every parameter matching `pattern` to `value`, in name order; the names set.
    ///
    /// Nothing is set if no parameter matches, if the value is too long, or if any match is
    /// read-only (a glob that reaches read-only parameters is most likely a mistake). If a
    /// setter refuses, that parameter keeps its value, the ones after it are not tried, and the
    /// error lists the ones already set.
    pub fn set(&self, pattern: &str, value: &str) -> Result<Vec<String>, ParamError> {
        if value.len() > VALUE_LEN_MAX {
            return Err(ParamError::ValueTooLong {
                pattern: pattern.to_owned(),
                len_bytes: value.len(),
                len_max_bytes: VALUE_LEN_MAX,
            });
        }
        let matched = self.matching(pattern, Glob::matches)?;
        if let Some((name, _)) = matched.iter().find(|(_, param)| !param.is_writable()) {
            return Err(ParamError::ReadOnly { name: name.clone() });
        }
        let mut already_set = Vec::with_capacity(matched.len());
        for (name, param) in matched {
            match param.set(value) {
                Ok(true) => already_set.push(name),
                // Checked above; a parameter's setter never changes after registration.
                Ok(false) => return Err(ParamError::ReadOnly { name }),
                Err(reason) => {
                    let value = value.to_owned();
                    return Err(ParamError::Rejected {
                        name,
                        value,
                        reason,
                        already_set,
                    });
                }
            }
        }
        Ok(already_set)
    }

    /// The names of parameters matching `pattern` or lying below a match (`fabric` lists all of
    /// `fabric.*.*`, like `lctl list_param -R`), in name order, without reading values.
    pub fn list(&self, pattern: &str) -> Result<Vec<ParamInfo>, ParamError> {
        let matched = self.matching(pattern, |glob, name| {
            glob.matches(name) || glob.matches_below(name)
        })?;
        Ok(matched
            .into_iter()
            .map(|(name, param)| ParamInfo {
                writable: param.is_writable(),
                name,
            })
            .collect())
    }

    /// The registered parameters whose names `accept` (under the parsed `pattern`), copied out
    /// so the lock is released before any getter or setter runs. Empty is [`ParamError::NoMatch`].
    fn matching(
        &self,
        pattern: &str,
        accept: impl Fn(&Glob, &str) -> bool,
    ) -> Result<Vec<(String, Param)>, ParamError> {
        let glob = Glob::parse(pattern)?;
        let params = self.read();
        let matched: Vec<(String, Param)> = params
            .iter()
            .filter(|(name, _)| accept(&glob, name))
            .map(|(name, param)| (name.clone(), param.clone()))
            .collect();
        if matched.is_empty() {
            return Err(ParamError::NoMatch {
                pattern: pattern.to_owned(),
            });
        }
        Ok(matched)
    }

    /// The map for reading. A panic elsewhere cannot leave the map half-changed (each
    /// change is one insert, remove or retain), so a poisoned lock is still safe to use.
    fn read(&self) -> RwLockReadGuard<'_, BTreeMap<String, Param>> {
        self.params.read().unwrap_or_else(PoisonError::into_inner)
    }

    /// The map for changing; see [`ParamTree::read`] on poisoning.
    fn write(&self) -> RwLockWriteGuard<'_, BTreeMap<String, Param>> {
        self.params.write().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Checks that `name` is a dotted name that globs can reach and the CLI can print.
fn check_name(name: &str) -> Result<(), ParamError> {
    let invalid = |reason: String| {
        Err(ParamError::InvalidName {
            name: name.to_owned(),
            reason,
        })
    };
    if name.len() > NAME_LEN_MAX {
        return invalid(format!("it is longer than {NAME_LEN_MAX} bytes"));
    }
    if name.split('.').any(str::is_empty) {
        return invalid(
            "it has an empty segment (empty name, or a leading, trailing or doubled dot)".into(),
        );
    }
    if let Some(c) = name
        .chars()
        .find(|&c| NAME_FORBIDDEN.contains(&c) || c.is_whitespace() || c.is_control())
    {
        return invalid(format!("it contains {c:?}"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

    /// A small tree like a node's: two networks' credits, a journal flag, a counter, a table.
    fn node_tree() -> (ParamTree, Arc<AtomicU64>, Arc<AtomicBool>) {
        let tree = ParamTree::new();
        let credits = Arc::new(AtomicU64::new(8));
        let sync_journal = Arc::new(AtomicBool::new(true));
        tree.register(
            "fabric.tcp0.credits",
            Param::u64(Arc::clone(&credits), 1..=1024),
        )
        .unwrap();
        tree.register(
            "fabric.mem0.credits",
            Param::u64(Arc::new(AtomicU64::new(64)), 1..=1024),
        )
        .unwrap();
        tree.register(
            "fabric.tcp0.sent",
            Param::counter(Arc::new(AtomicU64::new(5))),
        )
        .unwrap();
        tree.register(
            "fabric.peers",
            Param::read_only(|| "nid credits\n17@mem0 8\n".into()),
        )
        .unwrap();
        tree.register(
            "obdfilter.OST0000.sync_journal",
            Param::flag(Arc::clone(&sync_journal)),
        )
        .unwrap();
        (tree, credits, sync_journal)
    }

    fn names(values: &[ParamValue]) -> Vec<&str> {
        values.iter().map(|v| v.name.as_str()).collect()
    }

    #[test]
    fn get_by_glob_returns_values_in_name_order() {
        let (tree, _, _) = node_tree();
        let got = tree.get("fabric.*.credits").unwrap();
        assert_eq!(names(&got), ["fabric.mem0.credits", "fabric.tcp0.credits"]);
        assert_eq!(got[1].value, "8");
        assert!(got[1].writable);
        let got = tree.get("fabric.peers").unwrap();
        assert_eq!(got[0].value, "nid credits\n17@mem0 8\n");
        assert!(!got[0].writable);
        assert_eq!(names(&tree.get("*.*.*").unwrap()).len(), 4);
    }

    #[test]
    fn get_of_an_unknown_pattern_names_it() {
        let (tree, _, _) = node_tree();
        for pattern in ["fabric.tcp1.credits", "fabric.*.x", "fabric.tcp0", "nope"] {
            let err = tree.get(pattern).unwrap_err();
            assert!(
                matches!(&err, ParamError::NoMatch { pattern: p } if p == pattern),
                "{err:?}"
            );
            assert!(err.to_string().contains(pattern));
        }
        assert!(matches!(
            tree.get("fabric..x"),
            Err(ParamError::InvalidPattern { .. })
        ));
    }

    #[test]
    fn set_changes_every_match_and_reports_them() {
        let (tree, credits, sync_journal) = node_tree();
        assert_eq!(
            tree.set("fabric.*.credits", "32").unwrap(),
            ["fabric.mem0.credits", "fabric.tcp0.credits"]
        );
        assert_eq!(credits.load(Ordering::Relaxed), 32);
        assert_eq!(tree.get("fabric.mem0.credits").unwrap()[0].value, "32");
        assert_eq!(
            tree.set("obdfilter.*.sync_journal", "0").unwrap(),
            ["obdfilter.OST0000.sync_journal"]
        );
        assert!(!sync_journal.load(Ordering::Relaxed));
    }

    #[test]
    fn set_on_read_only_errors_and_sets_nothing() {
        let (tree, credits, _) = node_tree();
        let err = tree.set("fabric.peers", "x").unwrap_err();
        assert!(matches!(&err, ParamError::ReadOnly { name } if name == "fabric.peers"));
        assert_eq!(err.to_string(), "parameter fabric.peers is read-only");
        // A glob reaching both writable and read-only parameters sets none of them.
        let err = tree.set("fabric.tcp0.*", "9").unwrap_err();
        assert!(matches!(&err, ParamError::ReadOnly { name } if name == "fabric.tcp0.sent"));
        assert_eq!(credits.load(Ordering::Relaxed), 8);
    }

    #[test]
    fn set_of_an_unknown_pattern_errors() {
        let (tree, _, _) = node_tree();
        let err = tree.set("fabric.tcp9.credits", "4").unwrap_err();
        assert_eq!(err.to_string(), "no parameter matches fabric.tcp9.credits");
    }

    #[test]
    fn bad_values_leave_the_value_unchanged() {
        let (tree, credits, sync_journal) = node_tree();
        for bad in ["0", "2000", "many", ""] {
            let err = tree.set("fabric.tcp0.credits", bad).unwrap_err();
            match &err {
                ParamError::Rejected {
                    name,
                    value,
                    already_set,
                    ..
                } => {
                    assert_eq!(name, "fabric.tcp0.credits");
                    assert_eq!(value, bad);
                    assert!(already_set.is_empty());
                }
                other => panic!("{bad:?}: {other:?}"),
            }
            assert!(
                err.to_string()
                    .starts_with("fabric.tcp0.credits: cannot set"),
                "{err}"
            );
            assert_eq!(credits.load(Ordering::Relaxed), 8);
        }
        assert!(tree.set("obdfilter.OST0000.sync_journal", "yes").is_err());
        assert!(sync_journal.load(Ordering::Relaxed));
        let long = "1".repeat(VALUE_LEN_MAX + 1);
        assert!(matches!(
            tree.set("fabric.tcp0.credits", &long),
            Err(ParamError::ValueTooLong { .. })
        ));
    }

    #[test]
    fn a_refusal_part_way_through_a_glob_names_what_was_already_set() {
        let tree = ParamTree::new();
        let a = Arc::new(AtomicU64::new(1));
        let b = Arc::new(AtomicU64::new(1));
        tree.register("ost.a.max", Param::u64(Arc::clone(&a), 0..=10))
            .unwrap();
        tree.register("ost.b.max", Param::u64(Arc::clone(&b), 0..=5))
            .unwrap();
        let err = tree.set("ost.*.max", "7").unwrap_err();
        assert_eq!(
            err.to_string(),
            "ost.b.max: cannot set \"7\": 7 is outside 0..=5 (already set: ost.a.max)"
        );
        assert_eq!(
            (a.load(Ordering::Relaxed), b.load(Ordering::Relaxed)),
            (7, 1)
        );
    }

    #[test]
    fn list_matches_names_and_descends_into_directories() {
        let (tree, _, _) = node_tree();
        let listed = tree.list("fabric").unwrap();
        let names: Vec<&str> = listed.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "fabric.mem0.credits",
                "fabric.peers",
                "fabric.tcp0.credits",
                "fabric.tcp0.sent"
            ]
        );
        assert_eq!(tree.list("*").unwrap().len(), 5);
        let listed = tree.list("fabric.tcp0.*").unwrap();
        assert_eq!(
            listed,
            [
                ParamInfo {
                    name: "fabric.tcp0.credits".into(),
                    writable: true
                },
                ParamInfo {
                    name: "fabric.tcp0.sent".into(),
                    writable: false
                },
            ]
        );
        assert!(matches!(tree.list("lnet"), Err(ParamError::NoMatch { .. })));
    }

    #[test]
    fn registration_refuses_bad_and_duplicate_names() {
        let tree = ParamTree::new();
        let value = || Param::read_only(|| "1".into());
        for bad in [
            "", "a.", ".a", "a..b", "a.*", "a b", "a=b", "a[0]", "a\\b", "a\nb",
        ] {
            assert!(
                matches!(
                    tree.register(bad, value()),
                    Err(ParamError::InvalidName { .. })
                ),
                "{bad:?}"
            );
        }
        assert!(
            tree.register(&"a".repeat(NAME_LEN_MAX + 1), value())
                .is_err()
        );
        tree.register("peers.127_0_0_1:7001@tcp0.credits", value())
            .unwrap();
        let err = tree
            .register("peers.127_0_0_1:7001@tcp0.credits", value())
            .unwrap_err();
        assert!(matches!(err, ParamError::AlreadyRegistered { .. }));
        assert_eq!(tree.len(), 1);
    }

    #[test]
    fn the_tree_is_bounded() {
        let tree = ParamTree::new();
        for i in 0..PARAMS_MAX {
            tree.register(&format!("p.{i}"), Param::read_only(String::new))
                .unwrap();
        }
        let err = tree
            .register("p.last", Param::read_only(String::new))
            .unwrap_err();
        assert!(matches!(
            err,
            ParamError::TreeFull {
                params_max: PARAMS_MAX,
                ..
            }
        ));
    }

    #[test]
    fn unregister_prefix_removes_a_component_on_segment_boundaries() {
        let (tree, _, _) = node_tree();
        tree.register("fabric.tcp01.credits", Param::read_only(|| "1".into()))
            .unwrap();
        assert_eq!(tree.unregister_prefix("fabric.tcp0"), 2);
        assert!(tree.get("fabric.tcp0.*").is_err());
        assert_eq!(tree.get("fabric.tcp01.credits").unwrap().len(), 1);
        assert_eq!(tree.unregister_prefix("fabric.tcp0"), 0);
        assert!(tree.unregister("fabric.peers"));
        assert!(!tree.unregister("fabric.peers"));
        assert_eq!(tree.unregister_prefix("fabric"), 2);
        assert_eq!(tree.len(), 1);
        assert!(!tree.is_empty());
    }

    #[test]
    fn clones_share_one_tree_across_threads() {
        let tree = ParamTree::new();
        let handles: Vec<_> = (0..4)
            .map(|t| {
                let tree = tree.clone();
                std::thread::spawn(move || {
                    for i in 0..100 {
                        tree.register(
                            &format!("t{t}.p{i}"),
                            Param::read_only(move || i.to_string()),
                        )
                        .unwrap();
                    }
                })
            })
            .collect();
        for handle in handles {
            handle.join().unwrap();
        }
        assert_eq!(tree.len(), 400);
        assert_eq!(tree.get("t3.p42").unwrap()[0].value, "42");
    }

    #[test]
    fn a_getter_may_use_the_tree_itself() {
        let tree = ParamTree::new();
        let inner = tree.clone();
        tree.register(
            "params.count",
            Param::read_only(move || inner.len().to_string()),
        )
        .unwrap();
        assert_eq!(tree.get("params.count").unwrap()[0].value, "1");
    }
}
