//! `docs/walkthrough.md` names, step by step, the functions one write goes through and the
//! file each lives in. These tests keep it honest twice over:
//!
//! - every function it names must be defined in the file named beside it, so a rename or a
//!   move that forgets the page fails here;
//! - one real write, on a stack started here, must open the span of every bold function in
//!   the order the page gives (each opens a `trace` span of target `walkthrough`, named as
//!   the page names it), so a path that no longer goes where the page says fails here too.
//!
//! A name is bold (`**`Type::function`**` or `**`function`**`) and belongs to the first
//! `(`path.rs`)` after it, or is paired inline as `` `Type::function`, `path.rs` ``.

#![allow(clippy::unwrap_used)] // a test that panics has failed; that is its job

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use iopath_client::layout::StripeRequest;
use iopath_stack::runtime::{Mode, RunningStack, StorageDir};
use iopath_stack::schema::Stack;
use tracing::span::{Attributes, Id};
use tracing::{Level, Subscriber};
use tracing_subscriber::filter::Targets;
use tracing_subscriber::layer::{Context, Layer, SubscriberExt as _};
use tracing_subscriber::util::SubscriberInitExt as _;

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

/// The bold names, in the page's order: the steps one write takes.
fn steps(page: &str) -> Vec<String> {
    page.split("**`")
        .skip(1)
        .filter_map(|rest| rest.split_once("`**").map(|(name, _)| name.to_owned()))
        .collect()
}

/// The page's text.
fn page() -> String {
    std::fs::read_to_string(workspace_root().join("docs/walkthrough.md")).unwrap()
}

#[test]
fn every_function_the_walkthrough_names_is_where_it_says() {
    let root = workspace_root();
    let refs = references(&page());
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

/// The names of the `walkthrough` spans opened, in order.
#[derive(Clone, Default)]
struct Opened(Arc<Mutex<Vec<String>>>);

impl Opened {
    fn take(&self) -> Vec<String> {
        std::mem::take(&mut *self.0.lock().unwrap())
    }
}

impl<S: Subscriber> Layer<S> for Opened {
    fn on_new_span(&self, attributes: &Attributes<'_>, _: &Id, _: Context<'_, S>) {
        let name = attributes.metadata().name().to_owned();
        self.0.lock().unwrap().push(name);
    }
}

/// One client and one storage server with one target, on the in-process network. The
/// journal is synchronous, so the commit comes before the reply, as steps 15 to 17 read; one
/// stripe of 4 MiB, so a 4 MiB write is one packet whose pull lands in several chunks.
const STACK: &str = r#"
name = "walkthrough"
description = "one client, one storage server of one target with a sync journal, the metadata server"

[layout]
stripe_size = "4m"
stripe_count = 1

[[networks]]
name = "o2ib0"

[[nodes]]
name = "c"
role = "client"
nids = { o2ib0 = 100 }

[[nodes]]
name = "oss"
role = "oss"
nids = { o2ib0 = 10 }
targets = 1
journal = "sync"

[[nodes]]
name = "mds"
role = "mds"
nids = { o2ib0 = 1 }
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_write_opens_every_step_of_the_page_in_its_order() {
    let opened = Opened::default();
    tracing_subscriber::registry()
        .with(
            opened
                .clone()
                .with_filter(Targets::new().with_target("walkthrough", Level::TRACE)),
        )
        .init();
    let dir = tempfile::tempdir().unwrap();
    let stack = Stack::parse(STACK, "the walkthrough test's stack").unwrap();
    let storage = StorageDir::temporary("walkthrough", Some(dir.path())).unwrap();
    let running = RunningStack::start(stack, Mode::Embedded, storage, None)
        .await
        .unwrap();
    let client = running.connect(running.clients()[0]).await.unwrap();
    let stripe = StripeRequest {
        stripe_size_bytes: 4 << 20,
        stripe_count: 1,
        stripe_offset: -1,
    };
    let file = client.create("/walk", stripe).await.unwrap();
    opened.take();
    file.write_at(0, Bytes::from(vec![7u8; 4 << 20]))
        .await
        .unwrap();
    // The pinger reconnects within its interval.
    tokio::time::sleep(iopath_ost_client::ping::INTERVAL + Duration::from_millis(500)).await;
    file.close().await.unwrap();
    client.close().await.unwrap();
    let seen = opened.take();
    running.stop().await.unwrap();

    let steps = steps(&page());
    assert!(steps.len() >= 20, "the page's steps: {steps:?}");
    // Each step after the one before it, whatever else ran between them.
    let mut at = 0;
    for (number, step) in steps.iter().enumerate() {
        let Some(found) = seen[at..].iter().position(|name| name == step) else {
            let mut after: Vec<&str> = seen[at..].iter().map(String::as_str).collect();
            after.dedup();
            panic!(
                "the write never reached {step} (bold name {} of the page) after {}; the spans \
                 it opened from there: {after:?}",
                number + 1,
                steps[..number].last().map_or("its start", String::as_str),
            );
        };
        at += found + 1;
    }
}
