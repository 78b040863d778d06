//! The book in `docs/`: every relative link and `#anchor` resolves, every
//! page is in `SUMMARY.md`, the generated reference pages are what
//! `reckon docs …` writes now, every alert kind has its runbook page, and
//! every variable the code reads is a row of the configuration reference.

use reckon::cli::docs::Page;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Component, Path, PathBuf};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Markdown without fenced code blocks and inline code spans, which hold
/// text that looks like links but is not.
fn prose(text: &str) -> String {
    let mut out = String::new();
    let mut fence = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fence = !fence;
            out.push('\n');
            continue;
        }
        if fence {
            out.push('\n');
            continue;
        }
        let mut in_code = false;
        for c in line.chars() {
            if c == '`' {
                in_code = !in_code;
            } else if !in_code {
                out.push(c);
            }
        }
        out.push('\n');
    }
    out
}

/// Every `[text](target)` target in a page's prose, with its line.
fn links(text: &str) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    for (n, line) in prose(text).lines().enumerate() {
        let mut rest = line;
        while let Some(at) = rest.find("](") {
            let after = &rest[at + 2..];
            let Some(end) = after.find(')') else { break };
            found.push((n + 1, after[..end].trim().to_owned()));
            rest = &after[end..];
        }
    }
    found
}

/// mdBook's id of a heading: lower case, letters, digits, `_` and `-`
/// kept, spaces made `-`, everything else dropped; a repeated id gets
/// `-1`, `-2`, … as mdBook numbers them.
fn anchors(text: &str) -> BTreeSet<String> {
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut ids = BTreeSet::new();
    let mut fence = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fence = !fence;
            continue;
        }
        let title = line.trim_start_matches('#');
        if fence || title.len() == line.len() || !title.starts_with(' ') {
            continue;
        }
        let id: String = title
            .trim()
            .chars()
            .filter_map(|c| match c {
                c if c.is_whitespace() => Some('-'),
                c if c.is_alphanumeric() || c == '_' || c == '-' => Some(c),
                _ => None,
            })
            .flat_map(char::to_lowercase)
            .collect();
        let count = seen.entry(id.clone()).or_insert(0);
        ids.insert(if *count == 0 {
            id
        } else {
            format!("{id}-{count}")
        });
        *count += 1;
    }
    ids
}

/// `base/relative` without `.` and `..`; `None` when it leaves the root.
fn resolve(base: &Path, relative: &str) -> Option<PathBuf> {
    let mut path = PathBuf::new();
    for part in base.join(relative).components() {
        match part {
            Component::ParentDir => {
                if !path.pop() {
                    return None;
                }
            }
            Component::CurDir => {}
            other => path.push(other),
        }
    }
    Some(path)
}

/// Every Markdown page under `src`, relative to it.
fn pages(src: &Path) -> BTreeSet<PathBuf> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeSet<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(root, &path, out);
            } else if path.extension().is_some_and(|e| e == "md") {
                out.insert(path.strip_prefix(root).unwrap().to_owned());
            }
        }
    }
    let mut out = BTreeSet::new();
    walk(src, src, &mut out);
    out
}

/// What is wrong with the book whose sources are in `src`: each broken
/// link or anchor (page and line), each page SUMMARY.md leaves out, each
/// SUMMARY.md entry without its page.
fn check_book(src: &Path) -> Vec<String> {
    let mut errors = Vec::new();
    let pages = pages(src);
    let read = |page: &Path| std::fs::read_to_string(src.join(page)).unwrap();
    let summary = PathBuf::from("SUMMARY.md");
    let listed: BTreeSet<PathBuf> = links(&read(&summary))
        .into_iter()
        .map(|(_, target)| PathBuf::from(target))
        .collect();
    for page in &listed {
        if !pages.contains(page) {
            errors.push(format!(
                "SUMMARY.md lists {} but there is no such page",
                page.display()
            ));
        }
    }
    for page in &pages {
        if *page != summary && !listed.contains(page) {
            errors.push(format!("{} is not in SUMMARY.md", page.display()));
        }
    }
    let ids: BTreeMap<&PathBuf, BTreeSet<String>> =
        pages.iter().map(|p| (p, anchors(&read(p)))).collect();
    // SUMMARY.md's own entries are checked above.
    for page in pages.iter().filter(|p| **p != summary) {
        let base = page.parent().unwrap_or(Path::new(""));
        for (line, target) in links(&read(page)) {
            if ["http://", "https://", "mailto:"]
                .iter()
                .any(|scheme| target.starts_with(scheme))
            {
                continue;
            }
            let at = format!("{}:{line}: ({target})", page.display());
            let (path, anchor) = match target.split_once('#') {
                Some((path, anchor)) => (path, Some(anchor)),
                None => (target.as_str(), None),
            };
            let resolved = if path.is_empty() {
                Some(page.clone())
            } else {
                resolve(base, path)
            };
            let Some(resolved) = resolved else {
                errors.push(format!("{at} leaves the book"));
                continue;
            };
            if !src.join(&resolved).exists() {
                errors.push(format!("{at}: no such file"));
                continue;
            }
            if let Some(anchor) = anchor {
                match ids.get(&resolved) {
                    Some(found) if found.contains(anchor) => {}
                    Some(_) => errors.push(format!(
                        "{at}: {} has no heading #{anchor}",
                        resolved.display()
                    )),
                    None => errors.push(format!("{at}: an anchor into a file that is no page")),
                }
            }
        }
    }
    errors
}

#[test]
fn every_link_of_the_book_resolves() {
    let errors = check_book(&repo().join("docs/src"));
    assert!(
        errors.is_empty(),
        "the book's links:\n{}",
        errors.join("\n")
    );
}

/// The checker itself: a book with a link to a missing page, an anchor no
/// heading has, a link out of the book, a page the summary leaves out and
/// an entry without its page is reported on each count; a good one is not.
#[test]
fn the_link_checker_finds_broken_links() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path();
    std::fs::create_dir_all(src.join("part")).unwrap();
    let write = |path: &str, text: &str| std::fs::write(src.join(path), text).unwrap();
    write(
        "SUMMARY.md",
        "# Summary\n\n- [One](one.md)\n- [Two](part/two.md)\n- [Gone](gone.md)\n",
    );
    write(
        "one.md",
        "# One\n\n## The day's edge\n\nSee [two](part/two.md#section-two), [edge](#the-days-edge), \
         `[code](nowhere.md)`, [web](https://example.com/x).\n\n```\n[fenced](nowhere.md)\n```\n",
    );
    write(
        "part/two.md",
        "# Two\n\n## Section two\n\n[missing](../three.md), [bad anchor](../one.md#no-such), \
         [out](../../README.md), [edge](../one.md#the-days-edge)\n",
    );
    write("orphan.md", "# Orphan\n");
    let errors = check_book(src);
    let expect = [
        "SUMMARY.md lists gone.md but there is no such page",
        "orphan.md is not in SUMMARY.md",
        "part/two.md:5: (../three.md): no such file",
        "part/two.md:5: (../one.md#no-such): one.md has no heading #no-such",
        "part/two.md:5: (../../README.md) leaves the book",
    ];
    for e in expect {
        assert!(
            errors.iter().any(|found| found == e),
            "{e} not in {errors:#?}"
        );
    }
    assert_eq!(errors.len(), expect.len(), "{errors:#?}");
}

#[test]
fn headings_get_mdbooks_ids() {
    let ids = anchors(
        "# The day's edge\n## `GET /api/v1/payments/{payment_no}`\n## Configuration\n\
         ## Configuration\n```\n# not a heading\n```\n#hashtag\n",
    );
    let want: BTreeSet<String> = [
        "the-days-edge",
        "get-apiv1paymentspayment_no",
        "configuration",
        "configuration-1",
    ]
    .map(String::from)
    .into();
    assert_eq!(ids, want);
}

#[test]
fn generated_references_are_current() {
    for page in Page::ALL {
        let committed = std::fs::read_to_string(repo().join(page.file())).unwrap_or_default();
        assert!(
            committed == page.render(),
            "{} is not what the code says now: run `cargo run --bin reckon -- docs {} > {}`",
            page.file(),
            page.arg(),
            page.file()
        );
    }
}

#[test]
fn every_alert_kind_has_a_runbook_page() {
    let summary = std::fs::read_to_string(repo().join("docs/src/SUMMARY.md")).unwrap();
    for kind in reckon::domain::AlertKind::ALL {
        let page = format!("alerts/runbook/{kind}.md");
        assert!(
            repo().join("docs/src").join(&page).exists(),
            "no runbook page docs/src/{page}"
        );
        assert!(
            summary.contains(&format!("({page})")),
            "{page} is not in SUMMARY.md"
        );
    }
}

/// Every `RECKON_…` variable the server or console names is a setting of
/// the configuration reference.
#[test]
fn every_variable_read_is_in_the_configuration_reference() {
    fn walk(dir: &Path, found: &mut BTreeSet<String>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, found);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let text = std::fs::read_to_string(&path).unwrap();
                for piece in text.split("\"RECKON_").skip(1) {
                    let name: String = piece
                        .chars()
                        .take_while(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || *c == '_')
                        .collect();
                    if piece[name.len()..].starts_with('"') {
                        found.insert(format!("RECKON_{name}"));
                    }
                }
            }
        }
    }
    let mut found = BTreeSet::new();
    walk(&repo().join("src"), &mut found);
    walk(&repo().join("app/src"), &mut found);
    assert!(found.contains("RECKON_LISTEN"), "{found:?}");
    let settings: BTreeSet<&str> = reckon::config::SETTINGS
        .iter()
        .map(|s| s.variable)
        .collect();
    let missing: Vec<&String> = found
        .iter()
        .filter(|v| !settings.contains(v.as_str()))
        .collect();
    assert!(
        missing.is_empty(),
        "read by the code but not in config::SETTINGS (the configuration reference): {missing:?}"
    );
}
