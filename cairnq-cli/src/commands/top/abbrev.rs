//! Ids cut to fit a narrow column without becoming equal. Cutting the end
//! off (what a table does to a long cell) turns every generated worker id
//! into the same `worker_01…`: they share a prefix and a ULID's first ten
//! characters are its time, alike for workers started together. What tells
//! them apart is the tail, so the middle goes: `work…K3GSVEC5G3`.

/// Each of `ids` in at most `width` characters, keeping of its tail at
/// least as much as tells the ids apart (when the width allows), and a
/// little of its head for recognition; an id that fits is left whole.
pub(crate) fn distinct(ids: &[&str], width: usize) -> Vec<String> {
    let tail = distinguishing_tail(ids);
    ids.iter().map(|id| fit(id, width, tail)).collect()
}

/// `id` in at most `width` characters: head, `…`, tail, with at least
/// `min_tail` of the tail (two thirds of the room when that is more).
fn fit(id: &str, width: usize, min_tail: usize) -> String {
    let chars: Vec<char> = id.chars().collect();
    if chars.len() <= width {
        return id.to_string();
    }
    let room = width.saturating_sub(1);
    let tail = min_tail.max(room * 2 / 3).min(room);
    let head = room - tail;
    let mut cut: String = chars[..head].iter().collect();
    cut.push('…');
    cut.extend(&chars[chars.len() - tail..]);
    cut
}

/// The shortest tail length at which no two distinct ids end alike.
fn distinguishing_tail(ids: &[&str]) -> usize {
    let reversed: Vec<Vec<char>> = ids.iter().map(|id| id.chars().rev().collect()).collect();
    let mut longest = 1;
    for (i, a) in reversed.iter().enumerate() {
        for b in &reversed[i + 1..] {
            if a != b {
                let common = a.iter().zip(b).take_while(|(x, y)| x == y).count();
                longest = longest.max(common + 1);
            }
        }
    }
    longest
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cut_ids_stay_distinct_and_whole_ones_stay_whole() {
        let ids = ["worker_01M8Z7S8EP336X8DCAKG7BK9QG", "worker_01M8Z7S8EP336X8DCAKG7BK9QH", "web-1"];
        let cut = distinct(&ids, 12);
        assert_eq!(cut, ["work…G7BK9QG", "work…G7BK9QH", "web-1"]);
        // The tail grows to what tells them apart, the head gives way.
        let alike = ["worker_aaaaaaaaaaaaaaaaaaa1", "worker_bbbbbbbbbbbbaaaaaaa1"];
        let cut = distinct(&alike, 12);
        assert_eq!(cut, ["wo…aaaaaaaa1", "wo…baaaaaaa1"]);
        assert_eq!(distinct(&["worker_1"], 40), ["worker_1"]);
        assert_eq!(distinct(&["ééééé"], 3), ["é…é"], "characters, not bytes");
    }
}
