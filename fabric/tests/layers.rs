//! The fabric's modules form layers, bottom to top as LNet reads (names and errors, frames,
//! LNDs and interfaces, routing, the node, RPC): the `# Layout` list in `lib.rs` is that
//! order, and every module imports only modules listed before it. This test reads the sources
//! and holds the code to the list, so an import that would close a circle fails here.

#![allow(clippy::unwrap_used)] // a test that panics has failed; that is its job

use std::fs;
use std::path::{Path, PathBuf};

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// The module names of the `# Layout` list, in order (`- [`name`]:` or `- `name`:`).
fn layout_order(lib: &str) -> Vec<String> {
    let layout = lib
        .split("# Layout")
        .nth(1)
        .expect("lib.rs has a # Layout section");
    layout
        .lines()
        .skip(1) // the rest of the heading's line
        .take_while(|line| line.starts_with("//!"))
        .filter_map(|line| line.trim_start_matches("//!").trim().strip_prefix("- "))
        .filter_map(|item| {
            let item = item.trim_start_matches('[');
            let name = item.strip_prefix('`')?.split('`').next()?;
            Some(name.to_owned())
        })
        .collect()
}

/// The modules `lib.rs` declares (`pub mod x;` and `mod x;`).
fn declared(lib: &str) -> Vec<String> {
    lib.lines()
        .filter_map(|line| {
            let line = line.trim();
            let rest = line
                .strip_prefix("pub mod ")
                .or_else(|| line.strip_prefix("mod "))?;
            Some(rest.strip_suffix(';')?.to_owned())
        })
        .collect()
}

/// What the root re-exports, by name: `pub use nid::{NetId, Nid};` maps `Nid` to `nid`.
fn reexports(lib: &str) -> Vec<(String, String)> {
    let mut names = Vec::new();
    for line in lib.lines() {
        let Some(path) = line.trim().strip_prefix("pub use ") else {
            continue;
        };
        let path = path.trim_end_matches(';');
        let Some((module, rest)) = path.split_once("::") else {
            continue;
        };
        let items = rest.rsplit("::").next().unwrap_or_default();
        for item in items.trim_matches(|c| c == '{' || c == '}').split(',') {
            names.push((item.trim().to_owned(), module.to_owned()));
        }
    }
    names
}

/// Source text without comments and without its `#[cfg(test)]` part.
fn code_of(text: &str) -> String {
    let text = text.split("#[cfg(test)]").next().unwrap_or_default();
    let mut code = String::new();
    let mut rest = text;
    // Bounded: every pass consumes at least one character of `rest`.
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix("//") {
            rest = after.split_once('\n').map_or("", |(_, tail)| tail);
            code.push('\n');
        } else if let Some(after) = rest.strip_prefix("/*") {
            rest = after.split_once("*/").map_or("", |(_, tail)| tail);
        } else {
            let next = rest.chars().next().unwrap();
            code.push(next);
            rest = &rest[next.len_utf8()..];
        }
    }
    code
}

/// The top-level modules `code` names through `crate::`, including `crate::{a, b::c}`.
fn imports(code: &str) -> Vec<String> {
    let ident = |s: &str| -> String {
        s.trim()
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect()
    };
    let mut found = Vec::new();
    for piece in code.split("crate::").skip(1) {
        if let Some(group) = piece.strip_prefix('{') {
            // Names at the top of the group, up to its closing brace; what nests inside
            // `x::{..}` belongs to `x`.
            let mut depth = 0;
            let mut item = String::new();
            for c in group.chars() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        found.push(ident(&item));
                        item.clear();
                        continue;
                    }
                    _ => {}
                }
                if depth == 0 {
                    item.push(c);
                }
            }
            found.push(ident(&item));
        } else {
            found.push(ident(piece));
        }
    }
    found.retain(|name| !name.is_empty());
    found
}

/// The files of module `name`: `name.rs`, or every file under `name/`.
fn files_of(name: &str) -> Vec<PathBuf> {
    let file = src().join(format!("{name}.rs"));
    if file.exists() {
        return vec![file];
    }
    let dir = src().join(name);
    let mut files: Vec<PathBuf> = fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("module {name}: no {name}.rs and no {}: {e}", dir.display()))
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|e| e == "rs"))
        .collect();
    files.sort();
    files
}

#[test]
fn every_module_imports_only_modules_below_it_in_the_layout() {
    let lib = fs::read_to_string(src().join("lib.rs")).unwrap();
    let order = layout_order(&lib);
    let mut declared = declared(&lib);
    declared.sort();
    let mut listed = order.clone();
    listed.sort();
    assert_eq!(
        listed, declared,
        "the # Layout list in lib.rs names every module once"
    );
    let reexports = reexports(&lib);
    let mut upward = Vec::new();
    for (position, module) in order.iter().enumerate() {
        for file in files_of(module) {
            let code = code_of(&fs::read_to_string(&file).unwrap());
            for name in imports(&code) {
                // `crate::Nid` names the module that defines it.
                let target = reexports
                    .iter()
                    .find(|(item, _)| *item == name)
                    .map_or(name.clone(), |(_, module)| module.clone());
                if &target == module {
                    continue;
                }
                let at = order.iter().position(|m| *m == target).unwrap_or_else(|| {
                    panic!(
                        "{}: crate::{name} is no module of the layout",
                        file.display()
                    )
                });
                if at > position {
                    upward.push(format!(
                        "{} imports {target}, listed after {module}",
                        file.display()
                    ));
                }
            }
        }
    }
    assert!(
        upward.is_empty(),
        "imports against the layers:\n{}",
        upward.join("\n")
    );
}

#[test]
fn the_import_reader_sees_groups_and_skips_comments() {
    let code = code_of(
        "use crate::a::X;\n// use crate::commented;\n/* crate::block */\nuse crate::{b, c::{D, E}, d::F};\nfn f() { crate::e::g() }\n#[cfg(test)]\nuse crate::tested;",
    );
    assert_eq!(imports(&code), ["a", "b", "c", "d", "e"]);
}
