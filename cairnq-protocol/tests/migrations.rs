//! Pins every shipped migration: editing one that databases have already
//! applied would silently split installations, so it must fail here first.
//! A new migration gets a new line; an existing line never changes.

use cairnq_protocol::{Dialect, MigrationKind, migrations};

/// FNV-1a, 64 bit: stable across Rust versions and platforms, which is all a
/// pin needs (this is not a security boundary).
fn fnv1a(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |hash, byte| (hash ^ u64::from(byte)).wrapping_mul(0x0000_0100_0000_01b3))
}

const PINNED: &[(Dialect, &str, u64)] = &[
    (Dialect::Sqlite, "0001_init.sql", 0xa9c2a4b18cc0ff11),
    (Dialect::Sqlite, "0002_purge_index.sql", 0xa965e0ae09892a22),
    (Dialect::Sqlite, "0004_lease_index.sql", 0x0384ee02dc72dc2a),
    (Dialect::Sqlite, "0005_clear_terminal_lease.sql", 0x1ee2682848d080a4),
    (Dialect::Sqlite, "0006_claim_name_index.sql", 0xca52e91f075d4ce9),
    (Dialect::Sqlite, "0007_purge_status_index.sql", 0xfacbc08e200b430e),
    (Dialect::Sqlite, "0008_claim_due_index.sql", 0x27afab0d8a46a5f8),
    (Dialect::Sqlite, "0009_purge_queue_index.sql", 0xe504945427aeaa6f),
    (Dialect::Sqlite, "0010_drop_status_index.sql", 0xe8127b234aa99543),
    (Dialect::Sqlite, "ext_0001_schedules.sql", 0xa6a48da786988a11),
    (Dialect::Sqlite, "ext_0002_task_counts.sql", 0xc65e7c48431b70be),
    (Dialect::Sqlite, "ext_0003_list_order_index.sql", 0x508b895893899c79),
    (Dialect::Sqlite, "ext_0004_task_key_index.sql", 0x2437027b892b3da8),
    (Dialect::Sqlite, "ext_0005_schedules_ext_name.sql", 0x7aa119a5ccb27f8a),
    (Dialect::Sqlite, "ext_0006_limits.sql", 0x3cc89375e9ae9e31),
    (Dialect::Sqlite, "ext_0007_limit_queue_index.sql", 0x318c75ba5056a1d7),
    (Dialect::Sqlite, "ext_0008_task_dependencies.sql", 0xf73bc3f2b3abf625),
    (Dialect::Sqlite, "ext_0009_steps.sql", 0x452b472743ed8e6f),
    (Dialect::Sqlite, "ext_0010_cheaper_dependency_release.sql", 0xbcec0e55fd4c0e1b),
    (Dialect::Sqlite, "ext_0012_task_counts_upsert.sql", 0x2cfd281f07b164c8),
    (Dialect::Postgres, "0001_init.sql", 0x7778450e5831eae1),
    (Dialect::Postgres, "0002_purge_index.sql", 0xa965e0ae09892a22),
    (Dialect::Postgres, "0003_notify.sql", 0x9ac243e7bda4bbce),
    (Dialect::Postgres, "0004_lease_index.sql", 0x0384ee02dc72dc2a),
    (Dialect::Postgres, "0005_clear_terminal_lease.sql", 0x1ee2682848d080a4),
    (Dialect::Postgres, "0006_claim_name_index.sql", 0xca52e91f075d4ce9),
    (Dialect::Postgres, "0007_purge_status_index.sql", 0xfacbc08e200b430e),
    (Dialect::Postgres, "0008_claim_due_index.sql", 0x27afab0d8a46a5f8),
    (Dialect::Postgres, "0009_purge_queue_index.sql", 0xe504945427aeaa6f),
    (Dialect::Postgres, "0010_drop_status_index.sql", 0xe8127b234aa99543),
    (Dialect::Postgres, "ext_0001_schedules.sql", 0x65ef2bc51ddcc0f8),
    (Dialect::Postgres, "ext_0002_task_counts.sql", 0x7aed2dda1403b944),
    (Dialect::Postgres, "ext_0003_list_order_index.sql", 0x508b895893899c79),
    (Dialect::Postgres, "ext_0004_task_key_index.sql", 0x2437027b892b3da8),
    (Dialect::Postgres, "ext_0005_schedules_ext_name.sql", 0xfbca86d2a79d6bdc),
    (Dialect::Postgres, "ext_0006_limits.sql", 0x93ae74086593e8a9),
    (Dialect::Postgres, "ext_0007_limit_queue_index.sql", 0x24820ff9a4abeae0),
    (Dialect::Postgres, "ext_0008_task_dependencies.sql", 0x5abb1426e6cc07e9),
    (Dialect::Postgres, "ext_0009_steps.sql", 0x5ab39f9f45fc5e52),
    (Dialect::Postgres, "ext_0010_cheaper_dependency_release.sql", 0x1a3bd273fee8a506),
    (Dialect::Postgres, "ext_0011_dependency_edges_unchecked.sql", 0xc550783a0b558c47),
    (Dialect::Postgres, "ext_0013_limit_queue_newest_first.sql", 0x60af1466a6d413d3),
];

#[test]
fn shipped_migrations_are_unchanged() {
    let mut actual = Vec::new();
    for dialect in [Dialect::Sqlite, Dialect::Postgres] {
        for m in migrations(dialect) {
            actual.push((dialect, m.file_name, fnv1a(m.sql)));
        }
    }
    let listing: String =
        actual.iter().map(|(d, f, h)| format!("    (Dialect::{d:?}, {f:?}, 0x{h:016x}),\n")).collect();
    assert_eq!(actual.as_slice(), PINNED, "migration hashes changed; current values:\n{listing}");
}

#[test]
fn migrations_are_ordered_and_named_by_ordinal() {
    for dialect in [Dialect::Sqlite, Dialect::Postgres] {
        let all = migrations(dialect);
        let shared = all.iter().take_while(|m| m.kind == MigrationKind::Shared).count();
        let (shared, extensions) = all.split_at(shared);
        assert!(
            extensions.iter().all(|m| m.kind == MigrationKind::Extension),
            "every extension applies after the shared set"
        );
        for set in [shared, extensions] {
            assert!(set.windows(2).all(|w| w[0].ordinal < w[1].ordinal));
        }
        for m in all {
            let prefix = if m.kind == MigrationKind::Extension { "ext_" } else { "" };
            assert!(m.file_name.starts_with(&format!("{prefix}{:04}_", m.ordinal)));
            assert!(m.file_name.ends_with(".sql"));
        }
    }
    let sqlite: Vec<_> = migrations(Dialect::Sqlite).iter().map(|m| m.file_name).collect();
    assert!(!sqlite.contains(&"0003_notify.sql"), "0003 is Postgres-only");
    assert!(!sqlite.contains(&"ext_0011_dependency_edges_unchecked.sql"), "ext 11 is Postgres-only");
    assert!(sqlite.contains(&"ext_0012_task_counts_upsert.sql"), "ext 12 is SQLite-only");
    assert!(!sqlite.contains(&"ext_0013_limit_queue_newest_first.sql"), "ext 13 is Postgres-only");
    assert_eq!(migrations(Dialect::Postgres).len() + 1, sqlite.len() + 3);
}
