//! `report.html`: the markdown report as one self-contained page, every plot inlined as `<svg>`,
//! a small inline style sheet, no script and nothing fetched from the network.
//!
//! The conversion handles exactly what [`super::markdown`] emits: `#` headings, paragraphs, `- `
//! bullet lists, pipe tables (a header row, a rule with `---:` for right alignment, body rows),
//! inline `code` and **bold**, and image lines `![alt](file.svg)`, which become the SVG itself.

/// The style sheet, inlined in the page's head.
const STYLE: &str = "body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;max-width:72rem;\
margin:2rem auto;padding:0 1rem;line-height:1.45;color:#1b1b1b}\
h1,h2,h3{line-height:1.2}h2{margin-top:2.2rem;border-bottom:1px solid #ddd;padding-bottom:.2rem}\
div.wide{overflow-x:auto}table{border-collapse:collapse;margin:1rem 0;font-size:.9rem}\
th,td{border:1px solid #ccc;padding:.25rem .5rem;vertical-align:top}th{background:#f3f3f3}\
td.r,th.r{text-align:right;font-variant-numeric:tabular-nums}\
code{font-family:ui-monospace,Menlo,Consolas,monospace;background:#f4f4f4;padding:0 .2rem;border-radius:3px}\
figure{margin:1rem 0}figure svg{max-width:100%;height:auto}\
nav ul{columns:2;padding-left:1.2rem}";

/// The page for `md`, with each image line's file replaced by `svg(file)`: the SVG document to
/// inline, or `None`, which leaves the image's alt text in its place.
pub fn html(md: &str, svg: impl Fn(&str) -> Option<String>) -> String {
    let lines: Vec<&str> = md.lines().collect();
    let title = lines.iter().find_map(|l| l.strip_prefix("# ")).unwrap_or("report");
    let mut body = String::new();
    let mut paragraph: Vec<&str> = Vec::new();
    // The second-level headings (the lessons and the report's parts), for the contents list
    // that goes after the title.
    let mut contents: Vec<(String, &str)> = Vec::new();
    let mut toc_at = None;
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        let block = line.trim().is_empty()
            || heading(line).is_some()
            || line.starts_with('|')
            || line.starts_with("- ")
            || image(line).is_some();
        if block && !paragraph.is_empty() {
            body.push_str(&format!("<p>{}</p>\n", inline(&paragraph.join(" "))));
            paragraph.clear();
        }
        if let Some((level, text)) = heading(line) {
            if level == 2 {
                let id = anchor(text, &contents);
                body.push_str(&format!("<h2 id=\"{id}\">{}</h2>\n", inline(text)));
                contents.push((id, text));
            } else {
                body.push_str(&format!("<h{level}>{}</h{level}>\n", inline(text)));
            }
            if level == 1 && toc_at.is_none() {
                toc_at = Some(body.len());
            }
        } else if line.starts_with('|') {
            let start = i;
            while i + 1 < lines.len() && lines[i + 1].starts_with('|') {
                i += 1;
            }
            table(&mut body, &lines[start..=i]);
        } else if line.starts_with("- ") {
            body.push_str("<ul>\n");
            while i < lines.len() && lines[i].starts_with("- ") {
                body.push_str(&format!("<li>{}</li>\n", inline(&lines[i][2..])));
                i += 1;
            }
            body.push_str("</ul>\n");
            continue;
        } else if let Some((alt, file)) = image(line) {
            match svg(file).as_deref().map(strip_prolog) {
                Some(doc) => body.push_str(&format!("<figure>\n{}\n</figure>\n", doc.trim())),
                None => body.push_str(&format!("<p><em>{}</em></p>\n", escape(alt))),
            }
        } else if !line.trim().is_empty() {
            paragraph.push(line.trim());
        }
        i += 1;
    }
    if !paragraph.is_empty() {
        body.push_str(&format!("<p>{}</p>\n", inline(&paragraph.join(" "))));
    }
    if contents.len() > 1 {
        let mut nav = String::from("<nav>\n<p><strong>Contents</strong></p>\n<ul>\n");
        for (id, text) in &contents {
            nav.push_str(&format!("<li><a href=\"#{id}\">{}</a></li>\n", inline(text)));
        }
        nav.push_str("</ul>\n</nav>\n");
        body.insert_str(toc_at.unwrap_or(0), &nav);
    }
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>{}</title>\n\
         <style>{STYLE}</style>\n</head>\n<body>\n{body}</body>\n</html>\n",
        escape(title)
    )
}

/// An `id` for a heading: its letters and digits in lower case, other runs as one `-`, made
/// unique among `taken` with a number.
fn anchor(text: &str, taken: &[(String, &str)]) -> String {
    let mut id = String::new();
    for c in text.chars() {
        if c.is_ascii_alphanumeric() {
            id.push(c.to_ascii_lowercase());
        } else if !id.ends_with('-') && !id.is_empty() {
            id.push('-');
        }
    }
    let id = id.trim_end_matches('-').to_string();
    let id = if id.is_empty() { "part".to_string() } else { id };
    let mut unique = id.clone();
    let mut n = 2;
    while taken.iter().any(|(t, _)| *t == unique) {
        unique = format!("{id}-{n}");
        n += 1;
    }
    unique
}

/// `(level, text)` of a `#`…`######` heading line.
fn heading(line: &str) -> Option<(usize, &str)> {
    let level = line.bytes().take_while(|b| *b == b'#').count();
    let text = line[level..].strip_prefix(' ')?;
    (1..=6).contains(&level).then_some((level, text))
}

/// `(alt, file)` of an image line `![alt](file)`.
fn image(line: &str) -> Option<(&str, &str)> {
    let rest = line.trim().strip_prefix("![")?.strip_suffix(')')?;
    let (alt, file) = rest.rsplit_once("](")?;
    Some((alt, file))
}

/// An SVG document without its XML declaration or doctype, ready to sit inside HTML.
fn strip_prolog(svg: &str) -> &str {
    svg.find("<svg").map_or(svg, |at| &svg[at..])
}

/// The cells of one pipe-table row.
fn cells(row: &str) -> Vec<&str> {
    let row = row.trim();
    let row = row.strip_prefix('|').unwrap_or(row);
    let row = row.strip_suffix('|').unwrap_or(row);
    row.split('|').map(str::trim).collect()
}

/// Whether a cell is a rule cell (`---`, `---:`, `:---:`).
fn is_rule(cell: &str) -> bool {
    !cell.is_empty() && cell.contains('-') && cell.chars().all(|c| c == '-' || c == ':')
}

/// A pipe table: a header row, a rule (whose `---:` cells right-align their column), body rows.
fn table(out: &mut String, rows: &[&str]) {
    let rule = rows.get(1).map(|r| cells(r)).filter(|c| c.iter().all(|c| is_rule(c)));
    let right: Vec<bool> = rule.as_ref().map_or(Vec::new(), |c| c.iter().map(|c| c.ends_with(':')).collect());
    let class = |col: usize| if right.get(col).copied().unwrap_or(false) { " class=\"r\"" } else { "" };
    // A table wider than the page scrolls by itself, not the page.
    out.push_str("<div class=\"wide\"><table>\n");
    let body = if rule.is_some() {
        out.push_str("<thead><tr>");
        for (col, cell) in cells(rows[0]).into_iter().enumerate() {
            out.push_str(&format!("<th{}>{}</th>", class(col), inline(cell)));
        }
        out.push_str("</tr></thead>\n");
        &rows[2..]
    } else {
        rows
    };
    out.push_str("<tbody>\n");
    for row in body {
        out.push_str("<tr>");
        for (col, cell) in cells(row).into_iter().enumerate() {
            out.push_str(&format!("<td{}>{}</td>", class(col), inline(cell)));
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody>\n</table></div>\n");
}

/// Inline markdown: `code` spans and **bold**, everything else escaped.
fn inline(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut bold = false;
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        if let Some(after) = rest.strip_prefix('`')
            && let Some(end) = after.find('`')
        {
            out.push_str(&format!("<code>{}</code>", escape(&after[..end])));
            rest = &after[end + 1..];
        } else if let Some(after) = rest.strip_prefix("**") {
            out.push_str(if bold { "</strong>" } else { "<strong>" });
            bold = !bold;
            rest = after;
        } else {
            out.push_str(&escape(&rest[..c.len_utf8()]));
            rest = &rest[c.len_utf8()..];
        }
    }
    if bold {
        out.push_str("</strong>");
    }
    out
}

/// `text` with the HTML special characters escaped.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inline_code_bold_and_escapes() {
        assert_eq!(inline("a `x<y` **b & c** d"), "a <code>x&lt;y</code> <strong>b &amp; c</strong> d");
        assert_eq!(inline("**open"), "<strong>open</strong>");
        assert_eq!(inline("a ` lone"), "a ` lone");
    }

    #[test]
    fn blocks_convert() {
        let md = "# t\n\n| a | b |\n|---|---:|\n| 1 | 2 |\n\ntext\nmore\n\n- one\n- `two`\n\n![plot](p.svg)\n![gone](q.svg)\n";
        let page = html(md, |f| (f == "p.svg").then(|| "<?xml version=\"1.0\"?>\n<svg><rect/></svg>".to_string()));
        assert!(page.contains("<title>t</title>"));
        assert!(page.contains("<h1>t</h1>"));
        assert!(page.contains("<thead><tr><th>a</th><th class=\"r\">b</th></tr></thead>"));
        assert!(page.contains("<tr><td>1</td><td class=\"r\">2</td></tr>"));
        assert!(page.contains("<p>text more</p>"));
        assert!(page.contains("<ul>\n<li>one</li>\n<li><code>two</code></li>\n</ul>"));
        assert!(page.contains("<figure>\n<svg><rect/></svg>\n</figure>"));
        assert!(!page.contains("<?xml"));
        assert!(page.contains("<p><em>gone</em></p>"));
    }
}
