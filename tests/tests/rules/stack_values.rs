//! No program or test builds a stack file as text: stacks are values
//! (`iopath_stack::schema::StackFile` and its setters), written to TOML only at the edge where
//! a file is handed to `iopath up` or a node process.
//!
//! Text assembled with `format!` and friends is how a stack went wrong unseen before: a field
//! misspelt, a number where a mode belongs, a node's fields pasted onto the previous node, each
//! found only when the reader refused the file at run time (or, worse, took it). This reads
//! every member's sources and fails naming each place where stack TOML — `[[nodes]]`,
//! `[[networks]]` or `[[routes]]` as a line, or a `role = ` line — sits in the arguments of a call that
//! builds text: `format!`, `write!`, `writeln!`, `concat!`, `format_args!`, `push_str`,
//! `replace`, `replacen`.
//!
//! A whole stack file written once as a literal (`const STACK: &str = r#"…"#`) is allowed: it
//! reads as the file a person writes. So are the stack reader's own tests
//! (`stack/tests/schema.rs`), which feed it text on purpose, since what they check is how the
//! reader names a bad line.

#![allow(clippy::unwrap_used)] // a test that panics has failed; that is its job

use std::fs;
use std::path::{Path, PathBuf};

use crate::workspace::{members, root};

/// Files that may build stack text, each with its reason.
const ALLOWED: &[(&str, &str)] = &[
    (
        "stack/tests/schema.rs",
        "the reader's tests: what they check is how it names a bad line of text",
    ),
    (
        "tests/tests/rules/stack_values.rs",
        "this test: its self-test plants stack text to be found",
    ),
];

/// Calls whose arguments become text.
const BUILDERS: &[&str] = &[
    "format!(",
    "write!(",
    "writeln!(",
    "concat!(",
    "format_args!(",
    ".push_str(",
    ".replace(",
    ".replacen(",
];

/// What marks stack TOML: a line that is one of these tables' headers, or a node's role.
const TABLES: &[&str] = &["[[nodes]]", "[[networks]]", "[[routes]]"];

/// Whether `strings` (a call's string arguments, one per line or more) hold stack TOML. A
/// message that names a table ("add a [[routes]] entry") is not a stack.
fn is_stack_text(strings: &str) -> bool {
    strings
        .lines()
        .map(str::trim)
        .any(|line| TABLES.contains(&line) || line.starts_with("role = \""))
}

/// The string literals' contents in `args` (a call's arguments), read past escapes and raw
/// strings' hashes; `None` when the call's closing parenthesis is not found.
fn call_strings(text: &[char], open: usize) -> Option<(String, usize)> {
    let mut depth = 0usize;
    let mut strings = String::new();
    let mut i = open;
    while i < text.len() {
        let c = text[i];
        if c == 'r' && matches!(text.get(i + 1), Some('"' | '#')) {
            let hashes = text[i + 1..].iter().take_while(|&&h| h == '#').count();
            if text.get(i + 1 + hashes) == Some(&'"') {
                let start = i + 2 + hashes;
                let mut end = start;
                while end < text.len() {
                    if text[end] == '"'
                        && text[end + 1..]
                            .iter()
                            .take(hashes)
                            .filter(|&&h| h == '#')
                            .count()
                            == hashes
                    {
                        break;
                    }
                    end += 1;
                }
                strings.extend(&text[start..end.min(text.len())]);
                strings.push('\n');
                i = end + 1 + hashes;
                continue;
            }
        }
        match c {
            '"' => {
                i += 1;
                while i < text.len() && text[i] != '"' {
                    if text[i] == '\\' {
                        // `\n` and friends: kept as their letter, enough to find a mark.
                        i += 1;
                        if text.get(i) == Some(&'n') {
                            strings.push('\n');
                            i += 1;
                            continue;
                        }
                    }
                    if let Some(&ch) = text.get(i) {
                        strings.push(ch);
                    }
                    i += 1;
                }
                strings.push('\n');
            }
            '\'' if text.get(i + 2) == Some(&'\'') => i += 2, // a char such as '(' or '"'
            '\'' if text.get(i + 1) == Some(&'\\') => {
                while i + 1 < text.len() && text[i + 1] != '\'' {
                    i += 1;
                }
                i += 1;
            }
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth == 0 {
                    return Some((strings, i));
                }
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// `file:line` of every call in `source` that builds stack text.
fn stack_text_built(source: &str) -> Vec<usize> {
    let text: Vec<char> = source.chars().collect();
    let mut found = Vec::new();
    for builder in BUILDERS {
        let pattern: Vec<char> = builder.chars().collect();
        let mut at = 0;
        while at + pattern.len() <= text.len() {
            if text[at..at + pattern.len()] != pattern[..] {
                at += 1;
                continue;
            }
            let open = at + pattern.len() - 1;
            if let Some((strings, _)) = call_strings(&text, open)
                && is_stack_text(&strings)
            {
                found.push(text[..at].iter().filter(|&&c| c == '\n').count() + 1);
            }
            at += pattern.len();
        }
    }
    found.sort_unstable();
    found.dedup();
    found
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() && path.file_name().is_some_and(|n| n != "target") {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn no_stack_file_is_built_as_text() {
    let root = root();
    let mut files = Vec::new();
    for member in members(&root) {
        rust_files(&member, &mut files);
    }
    assert!(files.len() > 200, "read only {} files", files.len());
    let mut findings = Vec::new();
    for file in &files {
        let relative = file
            .strip_prefix(&root)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        if ALLOWED.iter().any(|(path, _)| *path == relative) {
            continue;
        }
        for line in stack_text_built(&fs::read_to_string(file).unwrap()) {
            findings.push(format!("{relative}:{line}"));
        }
    }
    assert!(
        findings.is_empty(),
        "stack files built as text (build a StackFile with its setters instead):\n{}",
        findings.join("\n")
    );
}

/// The reader finds what it is for, and leaves alone what it is not.
#[test]
fn stack_text_in_a_format_call_is_found_and_a_literal_file_is_not() {
    let planted = concat!(
        "fn f(n: u32) -> String {\n",
        "    let head = \"name = \\\"x\\\"\";\n",
        "    format!(\"{head}\\n[[nodes]]\\nname = \\\"c\\\"\\ncount = {n}\\n\")\n",
        "}\n",
        "fn g(t: &mut String) {\n",
        "    t.push_str(r#\"\n",
        "[[nodes]]\n",
        "name = \"fyod\"\n",
        "\"#);\n",
        "}\n",
    );
    assert_eq!(stack_text_built(planted), [3, 6]);
    let fine = concat!(
        "const STACK: &str = r#\"\n[[nodes]]\nrole = \"oss\"\n\"#;\n",
        "fn h(p: &str) -> String { format!(\"read the stack file {p} ('(' too)\") }\n",
        "fn i() -> char { '(' }\n",
        "fn j(s: &str) -> String { format!(\"{s}: add a [[routes]] entry\") }\n",
    );
    assert_eq!(stack_text_built(fine), Vec::<usize>::new());
}
