//! One way to take a lock: `.lock().unwrap_or_else(PoisonError::into_inner)` (and the same for
//! `read`, `write` and `into_inner`). A lock is poisoned when a thread panicked holding it;
//! that panic already said what broke, where it broke. Taking the data as it is keeps one
//! failed request from turning into a node that panics on every later call that touches the
//! same table (as tokio's locks, which never poison, and std's coming `nonpoison` ones behave).
//! Invariants are asserted where they are kept, not rediscovered at the next `lock()`.
//!
//! This reads every member's sources outside their unit tests and fails naming each lock
//! result taken another way: `expect` or `unwrap` on `lock()`, `read()`, `write()`.

#![allow(clippy::unwrap_used)] // a test that panics has failed; that is its job

use std::fs;
use std::path::Path;

use crate::workspace::{members, root};

/// The ways of taking a lock result that are not the one.
const OTHER_WAYS: &[&str] = &[
    ".lock().expect(",
    ".lock().unwrap()",
    ".read().expect(",
    ".read().unwrap()",
    ".write().expect(",
    ".write().unwrap()",
];

/// Lines (1-based) of `source`, before its unit tests, that take a lock another way. A call
/// split over lines (`.lock()` then `.expect(...)` on the next) is read as one.
fn other_ways(source: &str) -> Vec<usize> {
    let code = source
        .split("\n#[cfg(test)]\nmod tests")
        .next()
        .unwrap_or(source);
    let mut found = Vec::new();
    let lines: Vec<&str> = code.lines().collect();
    for (i, line) in lines.iter().enumerate() {
        let joined = match lines.get(i + 1) {
            Some(next) if line.trim_end().ends_with(')') && next.trim_start().starts_with('.') => {
                format!("{}{}", line.trim_end(), next.trim_start())
            }
            _ => (*line).to_owned(),
        };
        if OTHER_WAYS.iter().any(|way| joined.contains(way)) && !found.contains(&(i + 1)) {
            found.push(i + 1);
        }
    }
    found
}

fn library_sources(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            library_sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn every_lock_is_taken_one_way() {
    let root = root();
    let mut files = Vec::new();
    for member in members(&root) {
        library_sources(&member.join("src"), &mut files);
    }
    assert!(files.len() > 200, "read only {} files", files.len());
    let mut findings = Vec::new();
    for file in &files {
        for line in other_ways(&fs::read_to_string(file).unwrap()) {
            let relative = file.strip_prefix(&root).unwrap().display();
            findings.push(format!("{relative}:{line}"));
        }
    }
    assert!(
        findings.is_empty(),
        "locks taken another way than .unwrap_or_else(PoisonError::into_inner):\n{}",
        findings.join("\n")
    );
}

#[test]
fn a_planted_expect_is_found_split_or_not_and_unit_tests_are_left_alone() {
    let planted = "fn f(m: &Mutex<u32>) -> u32 {\n    *m.lock().expect(\"poisoned\")\n}\n\
                   fn g(m: &Mutex<u32>) -> u32 {\n    *m\n        .lock()\n        .unwrap()\n}\n\
                   fn h(m: &Mutex<u32>) -> u32 {\n    *m.lock().unwrap_or_else(PoisonError::into_inner)\n}\n\
                   #[cfg(test)]\nmod tests {\n    fn t(m: &Mutex<u32>) { m.lock().unwrap(); }\n}\n";
    assert_eq!(other_ways(planted), [2, 6]);
}
