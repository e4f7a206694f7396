//! The live view in a real browser: headless Chromium (installed by scripts/test) loads the
//! page of `iopath bench ior --web` while IOR runs on a routed stack of node processes (the
//! credit-stall lab's, docs/labs/live.md), and
//! the values it shows are checked against the nodes' own counters, read through their admin
//! services (`iopath lctl`) just before and just after: a counter the page shows lies between
//! the two. A screenshot is left in the target directory (`live-view.png`) to look at.

#![allow(clippy::unwrap_used)] // a test that panics has failed; that is its job

mod common;
use common::{iopath, lctl};

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The longest the stack and IOR may take to start, and the page to show traffic.
const START_MAX: Duration = Duration::from_secs(120);

/// The browser: `IOPATH_CHROMIUM`, or Debian's headless shell or full Chromium on the path.
fn chromium() -> PathBuf {
    if let Some(path) = std::env::var_os("IOPATH_CHROMIUM") {
        return PathBuf::from(path);
    }
    for name in ["chromium-headless-shell", "chromium", "chromium-browser"] {
        for dir in std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()) {
            let candidate = dir.join(name);
            if candidate.is_file() {
                return candidate;
            }
        }
    }
    panic!(
        "no headless Chromium on the path (chromium-headless-shell or chromium): scripts/test \
         installs Debian's chromium-headless-shell; or set IOPATH_CHROMIUM"
    );
}

/// Chromium, headless, with `args` on `url`; its standard output.
fn browse(url: &str, args: &[&str]) -> String {
    let output = Command::new(chromium())
        // Root in a container has no user namespace sandbox to give.
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
        ])
        .args(["--virtual-time-budget=3000", "--window-size=1500,1300"])
        .args(args)
        .arg(url)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "chromium failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

/// The text of the element with `data-node="node" data-field="field"` in the page `dom`.
fn field(dom: &str, node: &str, field: &str) -> Option<String> {
    let marker = format!("data-node=\"{node}\" data-field=\"{field}\"");
    let at = dom.find(&marker)?;
    let rest = &dom[at..];
    let text = &rest[rest.find('>')? + 1..];
    Some(text[..text.find('<')?].to_owned())
}

fn number(dom: &str, node: &str, name: &str) -> u64 {
    field(dom, node, name)
        .unwrap_or_else(|| panic!("the page shows no {name} for {node}"))
        .trim()
        .parse()
        .unwrap()
}

/// `GET path` from the live view: the body.
fn get(addr: SocketAddr, path: &str) -> String {
    common::http_get(&addr.to_string(), path)
}

/// A node's payload bytes sent and received, as its admin service's `stats` says.
fn node_bytes(admin: &str) -> u64 {
    let stats = lctl(admin, &["get_param", "-n", "stats"]);
    common::stat(&stats, "send_length") + common::stat(&stats, "recv_length")
}

/// The credit-stall lab's stack (docs/labs/live.md): spider-mini-routed with two large
/// buffers per router. The test runs the lab's command, smaller.
fn lab_stack() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/labs/starved-routers.toml")
}

/// A router's large-buffer low-water mark, as its `buffers` view says.
fn large_min(admin: &str) -> i64 {
    let buffers = lctl(admin, &["get_param", "-n", "buffers"]);
    let row = buffers
        .lines()
        .find(|l| l.starts_with("large"))
        .unwrap_or_else(|| panic!("no large pool: {buffers}"));
    // class bytes count credits min queue
    row.split_whitespace().nth(4).unwrap().parse().unwrap()
}

/// IOR with the live view, stopped when dropped.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn the_page_follows_the_stack_while_ior_runs_and_agrees_with_the_nodes() {
    let browser = chromium();
    assert!(browser.exists(), "{}", browser.display());
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    // Many short repetitions: traffic the whole time the page is looked at; the child is
    // killed once the checks are done (bounded anyway: 40 repetitions of 64 MiB).
    let mut child = iopath()
        .args(["bench", "ior", "--stack"])
        .arg(lab_stack())
        .arg("--processes")
        .args(["-w", "-r", "-F", "-t", "1m", "-b", "8m", "-i", "40"])
        .args(["--web", "127.0.0.1:0", "--dir"])
        .arg(dir.path())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = BufReader::new(child.stderr.take().unwrap());
    let running = Running(child);
    // The progress lines name the page's address.
    let (lines_tx, lines) = std::sync::mpsc::channel::<String>();
    std::thread::spawn(move || {
        for line in stderr.lines().map_while(Result::ok) {
            if lines_tx.send(line).is_err() {
                break;
            }
        }
    });
    let started = Instant::now();
    let url = loop {
        let line = lines
            .recv_timeout(START_MAX.saturating_sub(started.elapsed()))
            .expect("iopath bench ior --web never said where its live view is");
        if let Some(url) = line.strip_prefix("live view: ") {
            break url.trim().to_owned();
        }
    };
    let addr: SocketAddr = url
        .trim_start_matches("http://")
        .trim_end_matches('/')
        .parse()
        .unwrap();
    let view: serde_json::Value = serde_json::from_str(&get(addr, "/view.json")).unwrap();
    let admin_of = |name: &str| -> String {
        view["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|n| n["name"] == name)
            .and_then(|n| n["admin"].as_str())
            .unwrap_or_else(|| panic!("{name} has no admin address in the view"))
            .to_owned()
    };
    // A storage server and a router: what each sent and received, on the page and in the
    // node's own stats.
    let watched: Vec<(&str, String)> = ["oss0", "rtr1"]
        .into_iter()
        .map(|node| (node, admin_of(node)))
        .collect();
    let oss = &watched[0].1;

    // Until IOR's bytes show: the first look at the page may come before the first write.
    let mut shown: Vec<Vec<u64>> = Vec::new();
    while shown.len() < 2 {
        assert!(
            started.elapsed() < START_MAX * 2,
            "the page never showed traffic: {shown:?}"
        );
        let before: Vec<u64> = watched.iter().map(|(_, a)| node_bytes(a)).collect();
        // The sampler reads every second: two intervals on, its latest sample is newer
        // than `before`.
        std::thread::sleep(Duration::from_millis(2_200));
        let dom = browse(&url, &["--dump-dom"]);
        let after: Vec<u64> = watched.iter().map(|(_, a)| node_bytes(a)).collect();
        let mut page = Vec::new();
        for (i, (node, _)) in watched.iter().enumerate() {
            let on_page = number(&dom, node, "sent_bytes") + number(&dom, node, "received_bytes");
            assert!(
                before[i] <= on_page && on_page <= after[i],
                "{node}: the page shows {on_page} bytes, the node said {} before and {} after",
                before[i],
                after[i]
            );
            page.push(on_page);
        }
        // The page polls on its own: in three seconds of its time it updated more than once.
        let updates: u64 = dom
            .split("id=\"updates\">")
            .nth(1)
            .and_then(|t| t.split('<').next())
            .and_then(|t| t.parse().ok())
            .unwrap();
        assert!(updates >= 2, "the page updated {updates} times");
        // The journal as the page shows it, beside the target's own last_committed.
        let committed = lctl(
            oss,
            &["get_param", "-n", "obdfilter.iopath-OST0000.last_committed"],
        );
        let committed: u64 = committed.trim().parse().unwrap();
        let shown_committed = number(&dom, "oss0", "last_committed:iopath-OST0000");
        assert!(
            shown_committed <= committed,
            "the page shows last_committed {shown_committed}, the target {committed} after"
        );
        // Every row of the table is there, the routers with their buffers.
        for node in ["c0", "rtr0", "rtr3", "oss1", "mds"] {
            assert!(
                field(&dom, node, "sent_bytes").is_some(),
                "no row for {node}"
            );
        }
        assert_eq!(
            field(&dom, "rtr0", "router_buffers")
                .unwrap()
                .split('/')
                .count(),
            3
        );
        if page.iter().all(|&bytes| bytes > 0) {
            shown.push(page);
        }
    }
    // The lab's finding: with two large buffers a router queues bulk messages, and the page
    // shows the pool's low-water mark below zero in red; tiny and small pools never get there.
    // A mark only falls, so the page's is at or above the node's read after it.
    let dom = browse(&url, &["--dump-dom"]);
    let mut queued = Vec::new();
    for router in ["rtr0", "rtr1", "rtr2", "rtr3"] {
        let mins: Vec<i64> = field(&dom, router, "router_buffers_min")
            .unwrap()
            .split('/')
            .map(|m| m.parse().unwrap())
            .collect();
        assert_eq!(mins.len(), 3, "{router}: {mins:?}");
        assert!(mins[0] >= 0 && mins[1] >= 0, "{router}: {mins:?}");
        let after = large_min(&admin_of(router));
        assert!(
            mins[2] >= after,
            "{router}: the page's large min {} is below the node's {after}",
            mins[2]
        );
        if mins[2] < 0 {
            queued.push(router);
        }
    }
    assert!(
        !queued.is_empty(),
        "no router's large pool went below zero with two buffers"
    );
    assert!(
        dom.contains("data-field=\"router_buffers_min\" class=\"neg\""),
        "a negative low-water mark is drawn red"
    );
    assert!(
        shown[1]
            .iter()
            .zip(&shown[0])
            .all(|(later, earlier)| later > earlier),
        "the page's counters did not move while IOR ran: {shown:?}"
    );
    // Each link ends in a dot on the network it joins: one per interface drawn.
    let interfaces: usize = view["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["interfaces"].as_array().map_or(0, Vec::len))
        .sum();
    assert_eq!(dom.matches("<circle").count(), interfaces, "a dot per link");
    let picture = Path::new(env!("CARGO_TARGET_TMPDIR")).join("live-view.png");
    let _ = std::fs::remove_file(&picture);
    browse(&url, &[&format!("--screenshot={}", picture.display())]);
    let size = std::fs::metadata(&picture).map(|m| m.len()).unwrap_or(0);
    assert!(
        size > 10_000,
        "screenshot {} is {size} bytes",
        picture.display()
    );
    drop(running);
}
