//! Aligned text tables: columns padded to their widest cell, a header, and
//! colour that never shifts the alignment (widths count the text, not the
//! escape codes around it).

use std::fmt::Write;

/// A colour a cell may carry on a terminal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Tone {
    Plain,
    Good,
    Bad,
    Busy,
    Waiting,
    Dim,
}

impl Tone {
    fn code(self) -> Option<&'static str> {
        match self {
            Self::Plain => None,
            Self::Good => Some("32"),
            Self::Bad => Some("31"),
            Self::Busy => Some("33"),
            Self::Waiting => Some("36"),
            Self::Dim => Some("2"),
        }
    }
}

/// One cell: its text and tone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Cell {
    text: String,
    tone: Tone,
}

impl Cell {
    pub(crate) fn new(text: impl Into<String>, tone: Tone) -> Self {
        Self { text: text.into(), tone }
    }
}

impl<T: Into<String>> From<T> for Cell {
    fn from(text: T) -> Self {
        Self::new(text, Tone::Plain)
    }
}

/// A table being built.
pub(crate) struct Table {
    header: Vec<&'static str>,
    rows: Vec<Vec<Cell>>,
}

impl Table {
    pub(crate) fn new(header: Vec<&'static str>) -> Self {
        Self { header, rows: Vec::new() }
    }

    pub(crate) fn row(&mut self, cells: Vec<Cell>) {
        self.rows.push(cells);
    }

    /// The table as text, one line per row, coloured when `colour`.
    pub(crate) fn render(&self, colour: bool) -> String {
        let columns = self.header.len();
        let mut widths: Vec<usize> = self.header.iter().map(|h| h.chars().count()).collect();
        for row in &self.rows {
            for (i, cell) in row.iter().enumerate().take(columns) {
                widths[i] = widths[i].max(cell.text.chars().count());
            }
        }
        let mut out = String::new();
        let header: Vec<Cell> = self.header.iter().map(|h| Cell::new(*h, Tone::Dim)).collect();
        for row in std::iter::once(&header).chain(&self.rows) {
            let mut line = String::new();
            for (i, cell) in row.iter().enumerate().take(columns) {
                let last = i + 1 == row.len().min(columns);
                let pad = if last { 0 } else { widths[i] - cell.text.chars().count() + 2 };
                match cell.tone.code().filter(|_| colour) {
                    Some(code) => {
                        let _ = write!(line, "\x1b[{code}m{}\x1b[0m", cell.text);
                    }
                    None => line.push_str(&cell.text),
                }
                line.extend(std::iter::repeat_n(' ', pad));
            }
            out.push_str(line.trim_end());
            out.push('\n');
        }
        out
    }
}

/// `text` on one line, cut to `max` characters with an ellipsis.
pub(crate) fn truncated(text: &str, max: usize) -> String {
    let flat: String = text.chars().map(|c| if c.is_control() { ' ' } else { c }).collect();
    if flat.chars().count() <= max {
        return flat;
    }
    let mut cut: String = flat.chars().take(max.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_align_whatever_the_colour() {
        let mut table = Table::new(vec!["ID", "STATUS"]);
        table.row(vec!["a".into(), Cell::new("failed", Tone::Bad)]);
        table.row(vec!["longer".into(), "queued".into()]);
        assert_eq!(table.render(false), "ID      STATUS\na       failed\nlonger  queued\n");
        let coloured = table.render(true);
        assert!(coloured.contains("\x1b[31mfailed\x1b[0m"), "{coloured}");
    }

    #[test]
    fn long_text_is_cut_with_an_ellipsis_on_one_line() {
        assert_eq!(truncated("{\"a\":\n1}", 20), "{\"a\": 1}");
        assert_eq!(truncated("abcdef", 4), "abc…");
    }
}
