//! A small Markdown reader for task texts: paragraphs, bullet lists, headings, `code`,
//! **strong** and *emphasis*. It yields structure, never HTML, so a task text cannot inject
//! markup into the page.

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Inline {
    Text(String),
    Strong(String),
    Emphasis(String),
    Code(String),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Block {
    Heading(Vec<Inline>),
    Paragraph(Vec<Inline>),
    List(Vec<Vec<Inline>>),
}

pub fn parse(text: &str) -> Vec<Block> {
    let mut blocks = Vec::new();
    let mut paragraph: Vec<&str> = Vec::new();
    let mut list: Vec<String> = Vec::new();
    let flush_paragraph = |paragraph: &mut Vec<&str>, blocks: &mut Vec<Block>| {
        if !paragraph.is_empty() {
            blocks.push(Block::Paragraph(inline(&paragraph.join(" "))));
            paragraph.clear();
        }
    };
    let flush_list = |list: &mut Vec<String>, blocks: &mut Vec<Block>| {
        if !list.is_empty() {
            blocks.push(Block::List(list.iter().map(|item| inline(item)).collect()));
            list.clear();
        }
    };
    for line in text.lines() {
        let trimmed = line.trim();
        if trimmed.is_empty() {
            flush_paragraph(&mut paragraph, &mut blocks);
            flush_list(&mut list, &mut blocks);
        } else if let Some(item) = trimmed
            .strip_prefix("- ")
            .or_else(|| trimmed.strip_prefix("* "))
        {
            flush_paragraph(&mut paragraph, &mut blocks);
            list.push(item.to_string());
        } else if trimmed.starts_with('#') {
            flush_paragraph(&mut paragraph, &mut blocks);
            flush_list(&mut list, &mut blocks);
            blocks.push(Block::Heading(inline(
                trimmed.trim_start_matches('#').trim(),
            )));
        } else if !list.is_empty() && line.starts_with(' ') {
            // A continuation line of the last list item.
            if let Some(last) = list.last_mut() {
                last.push(' ');
                last.push_str(trimmed);
            }
        } else {
            flush_list(&mut list, &mut blocks);
            paragraph.push(trimmed);
        }
    }
    flush_paragraph(&mut paragraph, &mut blocks);
    flush_list(&mut list, &mut blocks);
    blocks
}

pub fn inline(text: &str) -> Vec<Inline> {
    let mut out = Vec::new();
    let mut plain = String::new();
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        let (marker, make): (&str, fn(String) -> Inline) = if rest.starts_with("**") {
            ("**", Inline::Strong)
        } else if c == '`' {
            ("`", Inline::Code)
        } else if (c == '*' || c == '_')
            && !rest[1..].starts_with(char::is_whitespace)
            && (c == '*' || plain.chars().last().is_none_or(|p| !p.is_alphanumeric()))
        {
            (if c == '*' { "*" } else { "_" }, Inline::Emphasis)
        } else {
            plain.push(c);
            rest = &rest[c.len_utf8()..];
            continue;
        };
        let after = &rest[marker.len()..];
        match after.find(marker) {
            Some(end) if end > 0 => {
                if !plain.is_empty() {
                    out.push(Inline::Text(std::mem::take(&mut plain)));
                }
                out.push(make(after[..end].to_string()));
                rest = &after[end + marker.len()..];
            }
            _ => {
                plain.push_str(marker);
                rest = after;
            }
        }
    }
    if !plain.is_empty() {
        out.push(Inline::Text(plain));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paragraphs_lists_and_inline_marks() {
        let blocks = parse("The job loads **2026-01-10** into `orders`.\nIt *crashes*.\n\n- one\n- two `x`\n\n## Then");
        assert_eq!(
            blocks,
            vec![
                Block::Paragraph(vec![
                    Inline::Text("The job loads ".into()),
                    Inline::Strong("2026-01-10".into()),
                    Inline::Text(" into ".into()),
                    Inline::Code("orders".into()),
                    Inline::Text(". It ".into()),
                    Inline::Emphasis("crashes".into()),
                    Inline::Text(".".into()),
                ]),
                Block::List(vec![
                    vec![Inline::Text("one".into())],
                    vec![Inline::Text("two ".into()), Inline::Code("x".into())]
                ]),
                Block::Heading(vec![Inline::Text("Then".into())]),
            ]
        );
    }

    #[test]
    fn unmatched_marks_and_snake_case_stay_text() {
        assert_eq!(
            inline("a * b and daily_revenue_x"),
            vec![Inline::Text("a * b and daily_revenue_x".into())]
        );
        assert_eq!(
            inline("<b>not html</b>"),
            vec![Inline::Text("<b>not html</b>".into())]
        );
    }
}
