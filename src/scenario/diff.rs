//! A line diff (Myers' O(ND) algorithm) printed as a unified diff with three lines of context.

/// One line of an edit script.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Edit<'a> {
    Same(&'a str),
    Removed(&'a str),
    Added(&'a str),
}

/// The shortest edit script turning `old` into `new` (Myers 1986, greedy forward search with
/// one saved frontier per edit distance, then a backtrack).
pub fn edits<'a>(old: &[&'a str], new: &[&'a str]) -> Vec<Edit<'a>> {
    let (n, m) = (old.len() as isize, new.len() as isize);
    let max = (n + m) as usize;
    let offset = max as isize + 1;
    let mut frontier = vec![0isize; 2 * max + 3];
    let mut history: Vec<Vec<isize>> = Vec::new();
    'search: for d in 0..=max as isize {
        history.push(frontier.clone());
        let mut k = -d;
        while k <= d {
            let at = (k + offset) as usize;
            let mut x = if k == -d || (k != d && frontier[at - 1] < frontier[at + 1]) {
                frontier[at + 1]
            } else {
                frontier[at - 1] + 1
            };
            let mut y = x - k;
            while x < n && y < m && old[x as usize] == new[y as usize] {
                x += 1;
                y += 1;
            }
            frontier[at] = x;
            if x >= n && y >= m {
                break 'search;
            }
            k += 2;
        }
    }
    // Backtrack from (n, m) through the saved frontiers.
    let mut script = Vec::new();
    let (mut x, mut y) = (n, m);
    for d in (0..history.len() as isize).rev() {
        let frontier = &history[d as usize];
        let k = x - y;
        let at = |k: isize| frontier[(k + offset) as usize];
        let down = k == -d || (k != d && at(k - 1) < at(k + 1));
        let previous_k = if down { k + 1 } else { k - 1 };
        let previous_x = if d == 0 { 0 } else { at(previous_k) };
        let previous_y = previous_x - previous_k;
        while x > previous_x.max(0) && y > previous_y.max(0) && x > 0 && y > 0 {
            x -= 1;
            y -= 1;
            script.push(Edit::Same(old[x as usize]));
        }
        if d == 0 {
            break;
        }
        if down {
            y -= 1;
            script.push(Edit::Added(new[y as usize]));
        } else {
            x -= 1;
            script.push(Edit::Removed(old[x as usize]));
        }
    }
    while x > 0 && y > 0 {
        x -= 1;
        y -= 1;
        script.push(Edit::Same(old[x as usize]));
    }
    script.reverse();
    script
}

/// `old` and `new` as a unified diff (`--- old_name`, `+++ new_name`, `@@` hunks with three
/// lines of context); empty when they are equal.
pub fn unified(old: &str, new: &str, old_name: &str, new_name: &str) -> String {
    const CONTEXT: usize = 3;
    let old_lines: Vec<&str> = old.lines().collect();
    let new_lines: Vec<&str> = new.lines().collect();
    let script = edits(&old_lines, &new_lines);
    if script.iter().all(|edit| matches!(edit, Edit::Same(_))) {
        return String::new();
    }
    // Line numbers (0-based) in old and new before each edit.
    let mut positions = Vec::with_capacity(script.len());
    let (mut o, mut n) = (0usize, 0usize);
    for edit in &script {
        positions.push((o, n));
        match edit {
            Edit::Same(_) => {
                o += 1;
                n += 1;
            }
            Edit::Removed(_) => o += 1,
            Edit::Added(_) => n += 1,
        }
    }
    let changed: Vec<usize> = script
        .iter()
        .enumerate()
        .filter(|(_, edit)| !matches!(edit, Edit::Same(_)))
        .map(|(idx, _)| idx)
        .collect();
    // Group changes whose context windows touch into hunks.
    let mut hunks: Vec<(usize, usize)> = Vec::new();
    for &idx in &changed {
        let start = idx.saturating_sub(CONTEXT);
        let end = (idx + CONTEXT + 1).min(script.len());
        match hunks.last_mut() {
            Some(last) if start <= last.1 => last.1 = end,
            _ => hunks.push((start, end)),
        }
    }
    let mut out = format!("--- {old_name}\n+++ {new_name}\n");
    for (start, end) in hunks {
        let (old_start, new_start) = positions[start];
        let slice = &script[start..end];
        let old_count = slice
            .iter()
            .filter(|edit| !matches!(edit, Edit::Added(_)))
            .count();
        let new_count = slice
            .iter()
            .filter(|edit| !matches!(edit, Edit::Removed(_)))
            .count();
        let range = |begin: usize, count: usize| {
            // Unified diff numbers lines from 1; an empty range names the line before it.
            let first = if count == 0 { begin } else { begin + 1 };
            format!("{first},{count}")
        };
        out.push_str(&format!(
            "@@ -{} +{} @@\n",
            range(old_start, old_count),
            range(new_start, new_count)
        ));
        for edit in slice {
            match edit {
                Edit::Same(line) => out.push_str(&format!(" {line}\n")),
                Edit::Removed(line) => out.push_str(&format!("-{line}\n")),
                Edit::Added(line) => out.push_str(&format!("+{line}\n")),
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn apply<'a>(script: &[Edit<'a>]) -> (Vec<&'a str>, Vec<&'a str>) {
        let mut old = Vec::new();
        let mut new = Vec::new();
        for edit in script {
            match edit {
                Edit::Same(line) => {
                    old.push(*line);
                    new.push(*line);
                }
                Edit::Removed(line) => old.push(*line),
                Edit::Added(line) => new.push(*line),
            }
        }
        (old, new)
    }

    fn changes(script: &[Edit<'_>]) -> usize {
        script
            .iter()
            .filter(|edit| !matches!(edit, Edit::Same(_)))
            .count()
    }

    #[test]
    fn scripts_rebuild_both_sides_minimally() {
        let cases: &[(&str, &str, usize)] = &[
            ("", "", 0),
            ("a", "", 1),
            ("", "a b", 2),
            ("a b c", "a b c", 0),
            ("a b c a b b a", "c b a b a c", 5),
            ("a b c d", "a x c d", 2),
            ("x a b", "a b y", 2),
            ("a a a", "a", 2),
        ];
        for (old, new, expected) in cases {
            let old: Vec<&str> = old.split_whitespace().collect();
            let new: Vec<&str> = new.split_whitespace().collect();
            let script = edits(&old, &new);
            assert_eq!(
                apply(&script),
                (old.clone(), new.clone()),
                "{old:?} → {new:?}"
            );
            assert_eq!(changes(&script), *expected, "{old:?} → {new:?}");
        }
    }

    #[test]
    fn pseudo_random_inputs_round_trip() {
        let mut seed = 7u64;
        let mut next = || {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (seed >> 33) as usize
        };
        let words = ["a", "b", "c", "d"];
        for _ in 0..300 {
            let old: Vec<&str> = (0..next() % 12).map(|_| words[next() % 4]).collect();
            let new: Vec<&str> = (0..next() % 12).map(|_| words[next() % 4]).collect();
            let script = edits(&old, &new);
            assert_eq!(apply(&script), (old.clone(), new.clone()));
        }
    }

    #[test]
    fn unified_hunks_have_context_and_ranges() {
        let old = "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n";
        let new = "1\n2\n3\n4\n5\nsix\n7\n8\n9\n10\n";
        assert_eq!(
            unified(old, new, "a.snap", "a.snap.new"),
            "--- a.snap\n+++ a.snap.new\n@@ -3,7 +3,7 @@\n 3\n 4\n 5\n-6\n+six\n 7\n 8\n 9\n"
        );
        assert_eq!(unified(old, old, "a", "b"), "");
        assert_eq!(
            unified("", "x\n", "a", "b"),
            "--- a\n+++ b\n@@ -0,0 +1,1 @@\n+x\n"
        );
    }
}
