//! Helpers the report tests share.
use std::collections::HashMap;

/// The first markdown table in `text` whose header row starts with `header`, as rows of column
/// name → cell.
pub fn first_table(text: &str, header: &str) -> Vec<HashMap<String, String>> {
    let cells = |line: &str| -> Vec<String> {
        line.trim().trim_start_matches('|').trim_end_matches('|').split('|').map(|c| c.trim().to_string()).collect()
    };
    let lines: Vec<&str> = text.lines().collect();
    let at = lines.iter().position(|l| l.starts_with(header)).unwrap_or_else(|| panic!("a table headed {header}"));
    let names = cells(lines[at]);
    lines[at + 2..]
        .iter()
        .take_while(|l| l.starts_with('|'))
        .map(|l| names.iter().cloned().zip(cells(l)).collect())
        .collect()
}
