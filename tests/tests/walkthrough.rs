//! `docs/walkthrough.md` names, step by step, the functions one write goes through and the
//! file each lives in. This test keeps it honest: every function it names must be defined in
//! the file named beside it, so a rename or a move that forgets the page fails here.
//!
//! A name is bold (`**`Type::function`**` or `**`function`**`) and belongs to the first
//! `(`path.rs`)` after it, or is paired inline as `` `Type::function`, `path.rs` ``.

#![allow(clippy::unwrap_used)] // a test that panics has failed; that is its job

use std::path::{Path, PathBuf};

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// The (name, path) pairs the page states, in order.
fn references(page: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut pending: Vec<String> = Vec::new();
    let mut rest = page;
    // Walk the backticked spans in order; a bold one is a name, a parenthesised `.rs` one is
    // where the pending names live, and `name`, `path.rs` is a pair of its own.
    while let Some(start) = rest.find('`') {
        let before = &rest[..start];
        let after = &rest[start + 1..];
        let Some(end) = after.find('`') else {
            break;
        };
        let token = &after[..end];
        let following = &after[end + 1..];
        let bold = before.ends_with("**") && following.starts_with("**");
        if token.ends_with(".rs") && before.ends_with('(') {
            for name in pending.drain(..) {
                out.push((name, token.to_owned()));
            }
        } else if bold {
            pending.push(token.to_owned());
        } else if let Some(path) = following
            .strip_prefix(", `")
            .and_then(|p| p.split('`').next())
            .filter(|p| p.ends_with(".rs"))
        {
            out.push((token.to_owned(), path.to_owned()));
        }
        rest = following;
    }
    assert!(pending.is_empty(), "names without a file: {pending:?}");
    out
}

#[test]
fn every_function_the_walkthrough_names_is_where_it_says() {
    let root = workspace_root();
    let page = std::fs::read_to_string(root.join("docs/walkthrough.md")).unwrap();
    let refs = references(&page);
    assert!(
        refs.len() >= 25,
        "the page names at least 25 functions with their files; found {}: {refs:?}",
        refs.len()
    );
    let mut missing = Vec::new();
    for (name, path) in &refs {
        let Ok(source) = std::fs::read_to_string(root.join(path)) else {
            missing.push(format!("{name}: no file {path}"));
            continue;
        };
        let (owner, function) = match name.split_once("::") {
            Some((owner, function)) => (Some(owner), function),
            None => (None, name.as_str()),
        };
        let defines_fn = source.contains(&format!("fn {function}("))
            || source.contains(&format!("fn {function}<"));
        let has_owner = owner.is_none_or(|owner| {
            [
                format!("struct {owner}"),
                format!("impl {owner}"),
                format!("for {owner}"),
                format!("trait {owner}"),
            ]
            .iter()
            .any(|decl| source.contains(decl.as_str()))
        });
        if !(defines_fn && has_owner) {
            missing.push(format!("{name} is not defined in {path}"));
        }
    }
    assert!(missing.is_empty(), "{}", missing.join("\n"));
}

#[test]
fn the_reference_reader_reads_what_the_page_writes() {
    let page = "1. **`A::b`** (`x/y.rs`) — why. **`c`** and **`d`** (`z.rs`) — \
                then (`E::f`, `w.rs`; `G::h`, `v.rs`) and `loose` words.";
    assert_eq!(
        references(page),
        [
            ("A::b".to_owned(), "x/y.rs".to_owned()),
            ("c".to_owned(), "z.rs".to_owned()),
            ("d".to_owned(), "z.rs".to_owned()),
            ("E::f".to_owned(), "w.rs".to_owned()),
            ("G::h".to_owned(), "v.rs".to_owned()),
        ]
    );
}
