//! Task and worker ids: a prefix plus a ULID (48-bit millisecond time, 80
//! random bits, Crockford base32, upper case), sortable by creation time.

use crate::clock::now_ms;

const CROCKFORD: &[u8; 32] = b"0123456789ABCDEFGHJKMNPQRSTVWXYZ";

/// A ULID for the given millisecond time and 80 random bits.
fn ulid_at(time_ms: u64, random80: u128) -> String {
    let value: u128 = (u128::from(time_ms & 0xFFFF_FFFF_FFFF) << 80) | (random80 & ((1u128 << 80) - 1));
    (0..26).rev().map(|i| CROCKFORD[((value >> (i * 5)) & 0x1F) as usize] as char).collect()
}

/// A fresh ULID for the current time.
fn ulid() -> String {
    let random = (u128::from(fastrand::u64(..)) << 16) | u128::from(fastrand::u16(..));
    ulid_at(u64::try_from(now_ms()).unwrap_or(0), random)
}

/// A fresh task id: `task_` + ULID.
///
/// ```
/// let id = cairnq_core::backend::new_task_id();
/// assert!(id.starts_with("task_") && id.len() == 31);
/// ```
pub fn new_task_id() -> String {
    format!("task_{}", ulid())
}

/// A fresh worker id: `worker_` + ULID.
pub fn new_worker_id() -> String {
    format!("worker_{}", ulid())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ulids_spell_time_then_randomness_in_crockford_base32() {
        assert_eq!(ulid_at(0, 0), "00000000000000000000000000");
        assert_eq!(ulid_at(1, 0), "00000000010000000000000000");
        assert!(ulid_at(1, 0) > ulid_at(0, u128::MAX), "ordered by time first");
    }
}
