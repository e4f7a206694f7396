//! Names beyond one per file: hard links (an inode named by several entries, counted, its
//! objects destroyed only with its last name), symbolic links, FIFOs, sockets and device
//! nodes, and orphans — files whose last name went while a client held them open, kept until
//! that client drops them, kept across a restart, and handed out for cleaning once their
//! holder has gone silent.

#![allow(clippy::unwrap_used)] // helpers outside #[test] fns: a panic here is a failed test

use std::sync::Arc;
use std::time::Duration;

use iopath_fabric::{Interface, MemNetwork, Nid, Node, NodeConfig};
use iopath_mds::error::errno::{EEXIST, EINVAL, EISDIR, ENOENT, ENOTDIR, EPERM};
use iopath_mds::namespace::op::Planned;
use iopath_mds::{
    Attributes, FileType, Keep, Layout, MdsClient, MdsConfig, MdsError, MdsPath, MdsService,
    MdsStore, MdsTarget, Namespace, NamespaceConfig, Op, Outcome, Owner, SpecialNode,
    StripeRequest,
};

fn p(text: &str) -> MdsPath {
    MdsPath::parse(text).unwrap()
}

/// Plans `op` and applies it as the store does, then checks every invariant; a refused op
/// must change nothing.
fn run(ns: &mut Namespace, op: Op) -> Result<Outcome, MdsError> {
    let before = ns.state().clone();
    let outcome = match ns.plan(&op, 1_000) {
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

fn attributes(outcome: Outcome) -> Attributes {
    match outcome {
        Outcome::Created(attributes) => attributes,
        other => panic!("{other:?}"),
    }
}

fn create(ns: &mut Namespace, path: &str) -> Attributes {
    attributes(
        run(
            ns,
            Op::Create {
                path: p(path),
                mode: 0o644,
                owner: Owner::UNRECORDED,
                stripe: StripeRequest::INHERIT,
            },
        )
        .unwrap(),
    )
}

fn link(ns: &mut Namespace, ino: u64, path: &str) -> Result<Attributes, MdsError> {
    run(ns, Op::Link { ino, path: p(path) }).map(attributes)
}

fn unlink(ns: &mut Namespace, path: &str, keep: Option<Keep>) -> Result<Outcome, MdsError> {
    run(
        ns,
        Op::Unlink {
            path: p(path),
            keep,
        },
    )
}

fn namespace() -> Namespace {
    Namespace::new(NamespaceConfig::new(vec![0, 1])).unwrap()
}

fn keep(ino: u64) -> Option<Keep> {
    Some(Keep {
        ino,
        owner: "7@mem0".into(),
    })
}

#[test]
fn a_hard_link_names_the_same_inode_and_its_objects_go_with_its_last_name() {
    let mut ns = namespace();
    run(
        &mut ns,
        Op::Mkdir {
            path: p("/d"),
            mode: 0o755,
            owner: Owner::UNRECORDED,
        },
    )
    .unwrap();
    let f = create(&mut ns, "/f");
    let linked = link(&mut ns, f.ino, "/d/g").unwrap();
    assert_eq!((linked.ino, linked.links), (f.ino, 2));
    assert_eq!(linked.layout, f.layout);
    assert_eq!(ns.stat(&p("/d/g")).unwrap(), ns.stat(&p("/f")).unwrap());
    // The first name goes: nothing to destroy, the other name stays.
    assert_eq!(unlink(&mut ns, "/f", None).unwrap(), Outcome::Removed);
    assert_eq!(ns.stat(&p("/d/g")).unwrap().links, 1);
    // A rename between two names of one inode does nothing (POSIX).
    link(&mut ns, f.ino, "/h").unwrap();
    let same = run(
        &mut ns,
        Op::Rename {
            source: p("/h"),
            target: p("/d/g"),
            keep: None,
        },
    )
    .unwrap();
    assert_eq!(
        same,
        Outcome::Renamed {
            replaced: None,
            orphaned: false
        }
    );
    assert_eq!(ns.stat(&p("/h")).unwrap().links, 2);
    // A rename over one of two names removes that name only.
    let other = create(&mut ns, "/other");
    let replaced = run(
        &mut ns,
        Op::Rename {
            source: p("/other"),
            target: p("/h"),
            keep: None,
        },
    )
    .unwrap();
    assert_eq!(
        replaced,
        Outcome::Renamed {
            replaced: None,
            orphaned: false
        }
    );
    assert_eq!(ns.stat(&p("/h")).unwrap().ino, other.ino);
    // The last name: its layout, to destroy its objects.
    assert_eq!(
        unlink(&mut ns, "/d/g", None).unwrap(),
        Outcome::Unlinked(f.layout.unwrap())
    );
    assert_eq!(ns.stat_ino(f.ino).unwrap_err().errno(), ENOENT);
}

#[test]
fn links_are_refused_where_posix_refuses_them() {
    let mut ns = namespace();
    let f = create(&mut ns, "/f");
    create(&mut ns, "/g");
    let errno = |r: Result<Attributes, MdsError>| r.unwrap_err().errno();
    assert_eq!(errno(link(&mut ns, f.ino, "/g")), EEXIST);
    assert_eq!(errno(link(&mut ns, f.ino, "/f/x")), ENOTDIR);
    assert_eq!(errno(link(&mut ns, f.ino, "/no/x")), ENOENT);
    assert_eq!(errno(link(&mut ns, 999, "/x")), ENOENT);
    assert_eq!(errno(link(&mut ns, 1, "/x")), EPERM, "a directory");
}

#[test]
fn symbolic_links_and_special_files_are_names_with_attributes() {
    let mut ns = namespace();
    let owner = Owner::new(3, 4);
    let l = attributes(
        run(
            &mut ns,
            Op::Symlink {
                path: p("/l"),
                target: "../some/where".into(),
                owner,
            },
        )
        .unwrap(),
    );
    assert_eq!(l.file_type, FileType::Symlink);
    assert_eq!(l.symlink_target.as_deref(), Some("../some/where"));
    assert_eq!((l.mode, l.uid, l.links), (0o777, Some(3), 1));
    assert!(l.layout.is_none());
    for (name, node, rdev, file_type) in [
        ("fifo", SpecialNode::Fifo, 0, FileType::Fifo),
        ("sock", SpecialNode::Socket, 0, FileType::Socket),
        ("chr", SpecialNode::CharDevice, 0x0501, FileType::CharDevice),
        (
            "blk",
            SpecialNode::BlockDevice,
            0x0802,
            FileType::BlockDevice,
        ),
    ] {
        let made = attributes(
            run(
                &mut ns,
                Op::Mknod {
                    path: p(&format!("/{name}")),
                    node,
                    mode: 0o640,
                    rdev,
                    owner,
                },
            )
            .unwrap(),
        );
        assert_eq!(
            (made.file_type, made.rdev, made.mode),
            (file_type, rdev, 0o640)
        );
        // They link, rename and unlink as names do; nothing is destroyed.
        link(&mut ns, made.ino, &format!("/{name}2")).unwrap();
        assert_eq!(
            unlink(&mut ns, &format!("/{name}"), None).unwrap(),
            Outcome::Removed
        );
        assert_eq!(
            unlink(&mut ns, &format!("/{name}2"), None).unwrap(),
            Outcome::Removed
        );
    }
    // A path through a symbolic link is not a directory: the kernel follows links, the
    // service never does.
    let through = ns.stat(&p("/l/x")).unwrap_err();
    assert_eq!(through.errno(), ENOTDIR);
    // Not a regular file: nothing to open, no layout.
    assert_eq!(ns.open(&p("/l")).unwrap_err().errno(), EINVAL);
    let errno = |ns: &mut Namespace, op| run(ns, op).unwrap_err().errno();
    for target in ["", "a\0b"] {
        let op = Op::Symlink {
            path: p("/bad"),
            target: target.into(),
            owner,
        };
        assert_eq!(errno(&mut ns, op), EINVAL, "{target:?}");
    }
    let long = Op::Symlink {
        path: p("/bad"),
        target: "x".repeat(4096),
        owner,
    };
    assert_eq!(errno(&mut ns, long), EINVAL);
    assert_eq!(errno(&mut ns, Op::Rmdir { path: p("/l") }), ENOTDIR);
    unlink(&mut ns, "/l", None).unwrap();
    assert_eq!(unlink(&mut ns, "/", None).unwrap_err().errno(), EISDIR);
}

#[test]
fn a_file_unlinked_while_held_open_is_kept_until_its_holder_drops_it() {
    let mut ns = namespace();
    let f = create(&mut ns, "/f");
    let layout = f.layout.clone().unwrap();
    // Kept only if the name is the file the holder names.
    let g = create(&mut ns, "/g");
    assert_eq!(
        unlink(&mut ns, "/g", keep(f.ino)).unwrap(),
        Outcome::Unlinked(g.layout.unwrap()),
        "another file is removed as usual"
    );
    assert_eq!(
        unlink(&mut ns, "/f", keep(f.ino)).unwrap(),
        Outcome::Orphaned
    );
    assert_eq!(ns.stat(&p("/f")).unwrap_err().errno(), ENOENT, "no name");
    let orphan = ns.stat_ino(f.ino).unwrap();
    assert_eq!((orphan.links, orphan.layout.as_ref()), (0, Some(&layout)));
    assert_eq!(ns.orphans()[&f.ino].owner, "7@mem0");
    // An orphan takes no new name (Linux: ENOENT).
    assert_eq!(link(&mut ns, f.ino, "/again").unwrap_err().errno(), ENOENT);
    // A name it still has elsewhere keeps it out of the orphans.
    let h = create(&mut ns, "/h");
    link(&mut ns, h.ino, "/h2").unwrap();
    assert_eq!(
        unlink(&mut ns, "/h", keep(h.ino)).unwrap(),
        Outcome::Removed
    );
    assert!(!ns.orphans().contains_key(&h.ino));
    // A rename over a held file keeps it too.
    let r = create(&mut ns, "/r");
    let replaced = run(
        &mut ns,
        Op::Rename {
            source: p("/h2"),
            target: p("/r"),
            keep: keep(r.ino),
        },
    )
    .unwrap();
    assert_eq!(
        replaced,
        Outcome::Renamed {
            replaced: None,
            orphaned: true
        }
    );
    // Dropped: its layout, to destroy; only orphans are dropped.
    assert_eq!(
        run(&mut ns, Op::DropOrphan { ino: f.ino }).unwrap(),
        Outcome::Unlinked(layout)
    );
    assert_eq!(ns.stat_ino(f.ino).unwrap_err().errno(), ENOENT);
    let again = run(&mut ns, Op::DropOrphan { ino: f.ino }).unwrap_err();
    assert_eq!(again.errno(), EINVAL);
    assert_eq!(
        run(&mut ns, Op::DropOrphan { ino: h.ino })
            .unwrap_err()
            .errno(),
        EINVAL,
        "not an orphan"
    );
}

#[test]
fn links_and_orphans_survive_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let config = || NamespaceConfig::new(vec![0, 1]);
    let store = MdsStore::open(dir.path(), config()).unwrap();
    let create = |path: &str| {
        let op = Op::Create {
            path: p(path),
            mode: 0o644,
            owner: Owner::UNRECORDED,
            stripe: StripeRequest::INHERIT,
        };
        attributes(store.execute(&op, 1).unwrap())
    };
    let f = create("/f");
    let g = create("/g");
    store
        .execute(
            &Op::Link {
                ino: f.ino,
                path: p("/f2"),
            },
            2,
        )
        .unwrap();
    let symlink = Op::Symlink {
        path: p("/l"),
        target: "f".into(),
        owner: Owner::UNRECORDED,
    };
    store.execute(&symlink, 3).unwrap();
    let unlink = Op::Unlink {
        path: p("/g"),
        keep: keep(g.ino),
    };
    assert_eq!(store.execute(&unlink, 4).unwrap(), Outcome::Orphaned);
    let check = |store: &MdsStore| {
        store.read(|ns| {
            assert_eq!(ns.stat(&p("/f2")).unwrap().links, 2);
            assert_eq!(
                ns.stat(&p("/l")).unwrap().symlink_target.as_deref(),
                Some("f")
            );
            assert_eq!(ns.stat_ino(g.ino).unwrap().links, 0);
            assert!(ns.orphans().contains_key(&g.ino));
            ns.check_invariants().unwrap();
        })
    };
    check(&store);
    drop(store);
    let store = MdsStore::open(dir.path(), config()).unwrap();
    check(&store);
    store.compact().unwrap();
    drop(store);
    let store = MdsStore::open(dir.path(), config()).unwrap();
    check(&store);
}

async fn mem_node(network: &Arc<MemNetwork>, n: u32) -> Node {
    Node::start(NodeConfig {
        interfaces: vec![Interface::Mem {
            nid: Nid::mem(n, 0),
            network: Arc::clone(network),
        }],
        ..Default::default()
    })
    .await
    .unwrap()
}

/// A holder that goes silent (a crashed mount) has its orphans handed to another client
/// once the grace period has passed, with their layouts, to clean; a holder that keeps
/// talking keeps its own; after a restart of the service the grace is counted again from its
/// start.
#[tokio::test(start_paused = true)]
async fn the_orphans_of_a_silent_holder_are_handed_out_for_cleaning() {
    let network = MemNetwork::new();
    let server = mem_node(&network, 1).await;
    let (crashed, alive, cleaner) = (
        mem_node(&network, 2).await,
        mem_node(&network, 3).await,
        mem_node(&network, 4).await,
    );
    let dir = tempfile::tempdir().unwrap();
    let targets = vec![MdsTarget {
        index: 0,
        nid: Nid::mem(10, 0),
    }];
    let mut config = MdsConfig::new(dir.path(), targets);
    config.orphan_grace = Duration::from_secs(30);
    let service = MdsService::start(&server, config.clone()).await.unwrap();
    let at = |node: &Node| MdsClient::new(node.clone(), server.nid());
    let (crashed_mds, alive_mds, cleaner_mds) = (at(&crashed), at(&alive), at(&cleaner));
    let mut layouts: Vec<(u64, Layout)> = Vec::new();
    for (mds, path) in [(&crashed_mds, "/a"), (&alive_mds, "/b")] {
        let made = mds
            .create(path, 0o644, StripeRequest::INHERIT)
            .await
            .unwrap();
        let removal = mds.unlink_keeping(path, Some(made.ino)).await.unwrap();
        assert!(removal.orphaned && removal.layout.is_none(), "{removal:?}");
        layouts.push((made.ino, made.layout.unwrap()));
    }
    let [(a, a_layout), (b, _)] = <[_; 2]>::try_from(layouts).unwrap();
    // The holders are heard from within the grace period: nothing is abandoned.
    tokio::time::advance(Duration::from_secs(20)).await;
    alive_mds.stat("/").await.unwrap();
    assert_eq!(cleaner_mds.abandoned_orphans().await.unwrap(), vec![]);
    // The first holder stays silent past it; the second keeps talking.
    tokio::time::advance(Duration::from_secs(15)).await;
    alive_mds.stat("/").await.unwrap();
    let handed = cleaner_mds.abandoned_orphans().await.unwrap();
    assert_eq!(handed, vec![(a, a_layout.clone())]);
    assert_eq!(
        cleaner_mds.abandoned_orphans().await.unwrap(),
        vec![],
        "handed to one cleaner at a time"
    );
    let dropped = cleaner_mds.drop_orphan(a).await.unwrap();
    assert_eq!(dropped.layout, Some(a_layout));
    assert_eq!(
        cleaner_mds.drop_orphan(a).await.unwrap_err().errno(),
        EINVAL
    );
    // Its holder lets go of the other.
    assert!(alive_mds.drop_orphan(b).await.unwrap().layout.is_some());
    // An orphan kept across a restart: the grace is counted from the new start.
    let made = crashed_mds
        .create("/c", 0o644, StripeRequest::INHERIT)
        .await
        .unwrap();
    crashed_mds
        .unlink_keeping("/c", Some(made.ino))
        .await
        .unwrap();
    drop(service);
    server.shutdown();
    let server = mem_node(&network, 1).await;
    let _service = MdsService::start(&server, config).await.unwrap();
    let cleaner_mds = MdsClient::new(cleaner.clone(), server.nid());
    tokio::time::advance(Duration::from_secs(29)).await;
    assert_eq!(cleaner_mds.abandoned_orphans().await.unwrap(), vec![]);
    tokio::time::advance(Duration::from_secs(2)).await;
    let handed = cleaner_mds.abandoned_orphans().await.unwrap();
    assert_eq!(
        handed.iter().map(|(i, _)| *i).collect::<Vec<_>>(),
        vec![made.ino]
    );
}
