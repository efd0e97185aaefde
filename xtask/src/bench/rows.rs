//! The measurement lines both bench programs print (`cairnq-bench` and
//! `bench_peer.py`), parsed by hand: the xtask has no dependencies, and the
//! lines are flat objects of strings and one number.

/// One measurement line, as `cairnq-bench` and `bench_peer.py` print them.
pub(crate) struct Row {
    pub(crate) workload: String,
    pub(crate) backend: String,
    pub(crate) metric: String,
    pub(crate) value: f64,
    pub(crate) detail: String,
    pub(crate) python: Option<f64>,
}

/// Parses the JSON lines both bench programs print, by hand: the xtask has no
/// dependencies, and the lines are flat objects of strings and one number.
pub(crate) fn parse_rows(text: &str) -> Vec<Row> {
    text.lines()
        .filter(|l| l.trim_start().starts_with('{'))
        .filter_map(|line| {
            Some(Row {
                workload: json_string(line, "workload")?,
                backend: json_string(line, "backend")?,
                metric: json_string(line, "metric")?,
                value: json_number(line, "value")?,
                detail: json_string(line, "detail").unwrap_or_default(),
                python: None,
            })
        })
        .collect()
}

fn json_field<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    let start = line.find(&format!("\"{key}\""))? + key.len() + 2;
    let rest = line[start..].trim_start().strip_prefix(':')?.trim_start();
    Some(rest)
}

fn json_string(line: &str, key: &str) -> Option<String> {
    let rest = json_field(line, key)?.strip_prefix('"')?;
    rest.find('"').map(|end| rest[..end].to_string())
}

fn json_number(line: &str, key: &str) -> Option<f64> {
    let rest = json_field(line, key)?;
    let end = rest.find([',', '}']).unwrap_or(rest.len());
    rest[..end].trim().parse().ok()
}

#[cfg(test)]
mod tests {
    //! The hand parser must read exactly what the bench programs print.

    use super::*;

    #[test]
    fn rows_parse_from_both_bench_programs() {
        let rust = r#"{"workload":"burn_down_c8","backend":"sqlite","metric":"tasks_per_s","value":1698.3,"detail":"200 no-op tasks"}"#;
        let python = r#"{"workload": "call_in_process", "backend": "sqlite", "metric": "p50_ms", "value": 4.5, "detail": "5 calls"}"#;
        let rows = parse_rows(&format!("noise\n{rust}\n{python}\n"));
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].workload, "burn_down_c8");
        assert_eq!(rows[0].value, 1698.3);
        assert_eq!(rows[1].metric, "p50_ms");
        assert_eq!(rows[1].value, 4.5);
    }
}
