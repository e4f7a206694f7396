//! Attributes kept at the metadata service: mode, owner and group, access, modification and
//! change times, link counts — set when an inode is made, changed by `setattr` (by inode
//! number), inherited from a set-group-ID directory, kept across a restart, and read from a
//! namespace written before they were kept.

#![allow(clippy::unwrap_used)] // helpers outside #[test] fns: a panic here is a failed test

use iopath_mds::error::errno::{EINVAL, ENOENT};
use iopath_mds::namespace::op::Planned;
use iopath_mds::store::RequestRef;
use iopath_mds::{
    Attributes, MdsError, MdsPath, MdsStore, Namespace, NamespaceConfig, Op, Outcome, Owner,
    SetAttributes, StripeRequest,
};

fn p(text: &str) -> MdsPath {
    MdsPath::parse(text).unwrap()
}

/// Plans `op` at `time_ns` and applies it as the store does, then checks every invariant; a
/// refused op must change nothing.
fn run(ns: &mut Namespace, op: Op, time_ns: u64) -> Result<Outcome, MdsError> {
    let before = ns.state().clone();
    let outcome = match ns.plan(&op, time_ns) {
        Err(e) => {
            assert_eq!(ns.state(), &before, "a refused {op:?} changed nothing");
            return Err(e);
        }
        Ok(Planned::Unchanged(outcome)) => outcome,
        Ok(Planned::Change(mutation)) => ns.apply(&mutation).unwrap(),
    };
    ns.check_invariants().unwrap();
    Ok(outcome)
}

fn made(outcome: Result<Outcome, MdsError>) -> Attributes {
    match outcome.unwrap() {
        Outcome::Created(attributes) => attributes,
        other => panic!("{other:?}"),
    }
}

fn mkdir(ns: &mut Namespace, path: &str, mode: u32, owner: Owner, time_ns: u64) -> Attributes {
    let op = Op::Mkdir {
        path: p(path),
        mode,
        owner,
    };
    made(run(ns, op, time_ns))
}

fn create(ns: &mut Namespace, path: &str, mode: u32, owner: Owner, time_ns: u64) -> Attributes {
    let op = Op::Create {
        path: p(path),
        mode,
        owner,
        stripe: StripeRequest::INHERIT,
    };
    made(run(ns, op, time_ns))
}

fn setattr(
    ns: &mut Namespace,
    ino: u64,
    change: SetAttributes,
    time_ns: u64,
) -> Result<Attributes, MdsError> {
    match run(ns, Op::SetAttr { ino, change }, time_ns)? {
        Outcome::AttributesSet(attributes) => Ok(attributes),
        other => panic!("{other:?}"),
    }
}

fn namespace() -> Namespace {
    Namespace::new(NamespaceConfig::new(vec![0, 1])).unwrap()
}

#[test]
fn a_new_inode_records_its_mode_owner_and_times_and_directories_count_their_links() {
    let mut ns = namespace();
    let d = mkdir(&mut ns, "/d", 0o750, Owner::new(10, 20), 100);
    assert_eq!((d.mode, d.uid, d.gid), (0o750, Some(10), Some(20)));
    assert_eq!(
        (d.atime_ns, d.mtime_ns, d.ctime_ns, d.links),
        (100, 100, 100, 2)
    );
    let f = create(&mut ns, "/d/f", 0o640, Owner::new(11, 21), 200);
    assert_eq!((f.mode, f.uid, f.gid), (0o640, Some(11), Some(21)));
    assert_eq!(
        (f.atime_ns, f.mtime_ns, f.ctime_ns, f.links),
        (200, 200, 200, 1)
    );
    // The directory changed when the file was made in it.
    let d = ns.stat(&p("/d")).unwrap();
    assert_eq!((d.mtime_ns, d.ctime_ns, d.atime_ns), (200, 200, 100));
    // A directory's links: two, and one more for each directory in it.
    assert_eq!(ns.stat(&MdsPath::root()).unwrap().links, 3);
    mkdir(&mut ns, "/d/s", 0o755, Owner::UNRECORDED, 300);
    mkdir(&mut ns, "/d/t", 0o755, Owner::UNRECORDED, 300);
    assert_eq!(ns.stat(&p("/d")).unwrap().links, 4);
    run(
        &mut ns,
        Op::Rename {
            source: p("/d/s"),
            target: p("/s"),
            keep: None,
        },
        400,
    )
    .unwrap();
    assert_eq!(ns.stat(&p("/d")).unwrap().links, 3, "one moved out");
    assert_eq!(ns.stat(&MdsPath::root()).unwrap().links, 4, "and in here");
    run(
        &mut ns,
        Op::Rename {
            source: p("/s"),
            target: p("/d/t"),
            keep: None,
        },
        500,
    )
    .unwrap();
    assert_eq!(ns.stat(&p("/d")).unwrap().links, 3, "it replaced one");
    assert_eq!(ns.stat(&MdsPath::root()).unwrap().links, 3);
    run(&mut ns, Op::Rmdir { path: p("/d/t") }, 600).unwrap();
    assert_eq!(ns.stat(&p("/d")).unwrap().links, 2);
    // An owner a caller does not give is not recorded.
    let g = create(&mut ns, "/g", 0o600, Owner::UNRECORDED, 700);
    assert_eq!((g.uid, g.gid), (None, None));
    // By number: the same attributes as by path.
    assert_eq!(ns.stat_ino(g.ino).unwrap(), ns.stat(&p("/g")).unwrap());
}

#[test]
fn setattr_changes_what_it_names_and_always_the_change_time() {
    let mut ns = namespace();
    let f = create(&mut ns, "/f", 0o644, Owner::new(1, 2), 100);
    let chmod = SetAttributes {
        mode: Some(0o4711),
        ..SetAttributes::default()
    };
    let after = setattr(&mut ns, f.ino, chmod, 200).unwrap();
    assert_eq!(after.mode, 0o4711);
    assert_eq!((after.uid, after.gid), (Some(1), Some(2)), "kept");
    assert_eq!(
        (after.atime_ns, after.mtime_ns, after.ctime_ns),
        (100, 100, 200)
    );
    let chown = SetAttributes {
        uid: Some(7),
        gid: Some(8),
        ..SetAttributes::default()
    };
    let after = setattr(&mut ns, f.ino, chown, 300).unwrap();
    assert_eq!(
        (after.mode, after.uid, after.gid, after.ctime_ns),
        (0o4711, Some(7), Some(8), 300)
    );
    // utimensat: times in the past are times like any other.
    let touch = SetAttributes {
        atime_ns: Some(5),
        mtime_ns: Some(6),
        ..SetAttributes::default()
    };
    let after = setattr(&mut ns, f.ino, touch, 400).unwrap();
    assert_eq!(
        (after.atime_ns, after.mtime_ns, after.ctime_ns),
        (5, 6, 400)
    );
    // A client's report of its writes names their time as the change time.
    let wrote = SetAttributes {
        mtime_ns: Some(450),
        ctime_ns: Some(450),
        ..SetAttributes::default()
    };
    let after = setattr(&mut ns, f.ino, wrote, 500).unwrap();
    assert_eq!(
        (after.atime_ns, after.mtime_ns, after.ctime_ns),
        (5, 450, 450)
    );
    assert_eq!(ns.stat(&p("/f")).unwrap(), after);
    // Directories too.
    let root = setattr(&mut ns, 1, chmod, 600).unwrap();
    assert_eq!((root.mode, root.ctime_ns), (0o4711, 600));
    // Refused, changing nothing: bits beyond 0o7777, a number no inode has.
    let bad = SetAttributes {
        mode: Some(0o10000),
        ..SetAttributes::default()
    };
    assert_eq!(
        setattr(&mut ns, f.ino, bad, 700).unwrap_err().errno(),
        EINVAL
    );
    let e = setattr(&mut ns, 999, chmod, 700).unwrap_err();
    assert_eq!(e.errno(), ENOENT, "{e}");
    assert_eq!(ns.stat_ino(999).unwrap_err().errno(), ENOENT);
}

#[test]
fn a_set_group_id_directory_gives_its_group_to_what_is_made_in_it() {
    let mut ns = namespace();
    mkdir(&mut ns, "/shared", 0o2775, Owner::new(1, 50), 100);
    let f = create(&mut ns, "/shared/f", 0o664, Owner::new(2, 60), 200);
    assert_eq!((f.uid, f.gid, f.mode), (Some(2), Some(50), 0o664));
    let sub = mkdir(&mut ns, "/shared/sub", 0o755, Owner::new(2, 60), 300);
    assert_eq!((sub.uid, sub.gid), (Some(2), Some(50)));
    assert_eq!(
        sub.mode, 0o2755,
        "a directory made in it is set-group-ID too"
    );
    let g = create(&mut ns, "/shared/sub/g", 0o600, Owner::new(3, 70), 400);
    assert_eq!(g.gid, Some(50), "and passes the group on");
    // Elsewhere, the maker's group.
    let h = create(&mut ns, "/h", 0o600, Owner::new(3, 70), 500);
    assert_eq!(h.gid, Some(70));
}

#[test]
fn attributes_survive_a_restart_from_the_log_and_from_a_snapshot() {
    let dir = tempfile::tempdir().unwrap();
    let config = || NamespaceConfig::new(vec![0, 1]);
    let store = MdsStore::open(dir.path(), config()).unwrap();
    let made = |outcome: Outcome| match outcome {
        Outcome::Created(a) | Outcome::AttributesSet(a) => a,
        other => panic!("{other:?}"),
    };
    let f = made(
        store
            .execute(
                &Op::Create {
                    path: p("/f"),
                    mode: 0o600,
                    owner: Owner::new(1000, 1000),
                    stripe: StripeRequest::INHERIT,
                },
                100,
            )
            .unwrap(),
    );
    let change = SetAttributes {
        mode: Some(0o640),
        uid: Some(33),
        atime_ns: Some(7),
        mtime_ns: Some(8),
        ..SetAttributes::default()
    };
    let request = RequestRef::new("12@tcp0", 5, 12, b"setattr");
    let set = made(
        store
            .execute_for(&Op::SetAttr { ino: f.ino, change }, 200, Some(&request))
            .unwrap(),
    );
    assert_eq!((set.mode, set.uid, set.gid), (0o640, Some(33), Some(1000)));
    assert_eq!((set.atime_ns, set.mtime_ns, set.ctime_ns), (7, 8, 200));
    drop(store);
    // A crash: the log replays.
    let store = MdsStore::open(dir.path(), config()).unwrap();
    assert_eq!(store.read(|ns| ns.stat_ino(f.ino)).unwrap(), set);
    // The setattr's resend is answered as it was, not run again (its ctime would move).
    let again = store
        .execute_for(&Op::SetAttr { ino: f.ino, change }, 300, Some(&request))
        .unwrap();
    assert_eq!(made(again), set);
    store.compact().unwrap();
    drop(store);
    // From the snapshot.
    let store = MdsStore::open(dir.path(), config()).unwrap();
    assert_eq!(store.recovery().records_replayed, 0);
    assert_eq!(store.read(|ns| ns.stat_ino(f.ino)).unwrap(), set);
    assert_eq!(store.read(|ns| ns.stat(&MdsPath::root())).unwrap().links, 2);
}

/// A namespace written by iopath before it kept owners, access times and link counts: a
/// snapshot and a log (`tests/data/format-1`, made by that version: a directory with a
/// default layout, files made, one unlinked, a directory made and removed, a rename over a
/// file, some changes named by a client's request).
#[test]
fn a_namespace_written_before_owners_and_times_were_kept_opens_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/format-1");
    for name in ["mds.snapshot", "mds.log"] {
        std::fs::copy(fixture.join(name), dir.path().join(name)).unwrap();
    }
    let store = MdsStore::open(dir.path(), NamespaceConfig::new(vec![0, 1, 2, 3])).unwrap();
    assert!(store.recovery().snapshot_seq > 0);
    assert!(store.recovery().records_replayed > 0);
    let t = 1_700_000_000_000_000_000u64;
    let d = store.read(|ns| ns.stat(&p("/d"))).unwrap();
    assert_eq!((d.mode, d.uid, d.gid, d.links), (0o750, None, None, 2));
    assert_eq!(
        d.atime_ns, d.mtime_ns,
        "no access time kept: the mtime stands in"
    );
    assert!(d.default_stripe.is_some());
    // /c was renamed over /d/a: its own mode and creation time, under its new name.
    let a = store.read(|ns| ns.stat(&p("/d/a"))).unwrap();
    assert_eq!(
        (a.mode, a.uid, a.links, a.mtime_ns),
        (0o644, None, 1, t + 8)
    );
    assert_eq!(
        a.layout.unwrap().stripe_count(),
        1,
        "made in the root: its default"
    );
    for gone in ["/b", "/gone", "/e", "/c"] {
        assert_eq!(
            store.read(|ns| ns.stat(&p(gone))).unwrap_err().errno(),
            ENOENT,
            "{gone}"
        );
    }
    let root = store.read(|ns| ns.stat(&MdsPath::root())).unwrap();
    assert_eq!((root.links, root.entries_count), (3, 1));
    // A change the old version logged with its request is answered from the reply table.
    let resent = RequestRef::new("12345@tcp0", 6, 2, &6u64.to_le_bytes());
    let outcome = store
        .execute_for(
            &Op::Rename {
                source: p("/c"),
                target: p("/d/a"),
                keep: None,
            },
            t + 100,
            Some(&resent),
        )
        .unwrap();
    assert!(
        matches!(
            outcome,
            Outcome::Renamed {
                replaced: Some(_),
                ..
            }
        ),
        "{outcome:?}"
    );
    // And it takes new changes, owners and all.
    let change = SetAttributes {
        uid: Some(5),
        ..SetAttributes::default()
    };
    store
        .execute(&Op::SetAttr { ino: a.ino, change }, t + 200)
        .unwrap();
    drop(store);
    let store = MdsStore::open(dir.path(), NamespaceConfig::new(vec![0, 1, 2, 3])).unwrap();
    assert_eq!(store.read(|ns| ns.stat(&p("/d/a"))).unwrap().uid, Some(5));
}
