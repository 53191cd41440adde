//! `charts/`: every replay draws its charts from the tallies its tables
//! hold, and report.md embeds them.

use std::collections::HashMap;

use crate::util::*;

/// (x, height) of every `<rect>` filled with `fill`, in drawing order.
fn bars(svg: &str, fill: &str) -> Vec<(i64, i64)> {
    let attr = |tag: &str, name: &str| -> i64 {
        let at = tag.find(&format!(" {name}=\"")).unwrap() + name.len() + 3;
        tag[at..].split('"').next().unwrap().parse().unwrap()
    };
    svg.lines()
        .filter(|l| l.starts_with("<rect") && l.contains(&format!("fill=\"{fill}\"")))
        .map(|l| (attr(l, "x"), attr(l, "height")))
        .collect()
}

#[test]
fn the_skip_rate_chart_draws_the_segments_figures() {
    let d = Dir::new();
    let out = d.path("o");
    let args = [
        "datasets/multilingual.jsonl",
        "datasets/seed.jsonl",
        "datasets/floors.jsonl",
        "--config",
        "datasets/gate.toml",
        "--quiet",
    ];
    expect_code(&replay_in(&out, &args), 0);
    let rows = csv_rows(&std::fs::read_to_string(out.join("segments.csv")).unwrap());
    let lang: Vec<&HashMap<String, String>> = rows
        .iter()
        .filter(|r| r["dimension"] == "language")
        .collect();
    // The chart's values: the 12 with the most baseline turns, then by name.
    let mut values: Vec<(u64, String)> = lang
        .iter()
        .filter(|r| r["variant"] == "legacy")
        .map(|r| (r["turns"].parse().unwrap(), r["value"].clone()))
        .collect();
    values.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    values.truncate(12);
    let svg = std::fs::read_to_string(out.join("charts/skip_rate_by_language.svg")).unwrap();
    let rate = |variant: &str, value: &str| -> f64 {
        let r = lang
            .iter()
            .find(|r| r["variant"] == variant && r["value"] == value)
            .unwrap();
        r["skip_rate"].parse().unwrap()
    };
    let mut all = Vec::new();
    for (variant, fill) in [("legacy", "#1F77B4"), ("smart", "#FF7F0E")] {
        let mut b = bars(&svg, fill);
        b.pop(); // its legend swatch
        assert_eq!(b.len(), values.len(), "{variant}: one bar per value");
        for ((_, value), (_, h)) in values.iter().zip(&b) {
            all.push((rate(variant, value), *h as f64));
        }
    }
    // Heights are proportional to the rates (to the pixel).
    let (top_rate, top_h) = all
        .iter()
        .cloned()
        .fold((0.0, 0.0), |a, b| if b.0 > a.0 { b } else { a });
    assert!(top_rate > 0.5, "{all:?}");
    for (rate, h) in &all {
        assert!(
            (h - rate / top_rate * top_h).abs() <= 1.5,
            "rate {rate}: {h} px of {top_h}"
        );
    }
    for (_, value) in &values {
        assert!(
            svg.contains(&format!("\n{value}\n</text>")),
            "{value} is named"
        );
    }
}

#[test]
fn report_md_embeds_every_chart_and_every_chart_is_an_svg() {
    let d = Dir::new();
    let out = d.path("o");
    expect_code(&replay_in(&out, &["datasets/floors.jsonl", "--quiet"]), 0);
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    for name in [
        "skip_rate_by_language",
        "skip_rate_by_intent",
        "critic_latency_cdf",
        "floors",
    ] {
        let file = format!("charts/{name}.svg");
        assert!(
            md.contains(&format!("]({file})")),
            "report.md embeds {file}"
        );
        let svg = std::fs::read_to_string(out.join(&file)).unwrap();
        assert!(
            svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"),
            "{file}"
        );
    }
    let cdf = std::fs::read_to_string(out.join("charts/critic_latency_cdf.svg")).unwrap();
    assert!(
        cdf.contains("smart with estimates"),
        "added calls are drawn at their estimates"
    );
    // A replay into the folder without charts (a sweep) removes them; a
    // user's own file in charts/ stays.
    std::fs::write(out.join("charts/mine.txt"), "mine").unwrap();
    expect_code(
        &run_in(
            &out,
            &[
                "sweep",
                "datasets/floors.jsonl",
                "--config",
                "datasets/sweep.toml",
                "--quiet",
            ],
        ),
        0,
    );
    assert!(!out.join("charts/floors.svg").exists());
    assert!(out.join("charts/mine.txt").exists());
}

/// Every bar carries its value (a bar of zero height reads `0%`, no data
/// reads `n/a`), every value its turns (`n=`), and the legend sits above
/// the tallest bar a rate can reach.
#[test]
fn bars_say_their_value_and_their_turns() {
    let d = Dir::new();
    let out = d.path("o");
    let args = [
        "datasets/seed.jsonl",
        "--config",
        "datasets/gate.toml",
        "--quiet",
    ];
    expect_code(&replay_in(&out, &args), 0);
    let rows = csv_rows(&std::fs::read_to_string(out.join("segments.csv")).unwrap());
    let svg = std::fs::read_to_string(out.join("charts/skip_rate_by_intent.svg")).unwrap();
    let texts: Vec<String> = svg
        .split("<text")
        .skip(1)
        .map(|t| {
            t.split('>')
                .nth(1)
                .unwrap_or("")
                .split('<')
                .next()
                .unwrap()
                .trim()
                .to_string()
        })
        .collect();
    let intent: Vec<&HashMap<String, String>> =
        rows.iter().filter(|r| r["dimension"] == "intent").collect();
    assert!(!intent.is_empty());
    let mut zero = 0;
    for r in &intent {
        let pct = format!("{:.0}%", 100.0 * r["skip_rate"].parse::<f64>().unwrap());
        zero += usize::from(pct == "0%");
        assert!(
            texts.contains(&pct),
            "{pct} for {} {}: {texts:?}",
            r["variant"],
            r["value"]
        );
        assert!(
            texts.contains(&format!("n={}", r["turns"])),
            "n for {}: {texts:?}",
            r["value"]
        );
    }
    // The legacy gate skips nothing on the seed: its bars are all 0%.
    assert!(zero >= 1, "{texts:?}");
    assert_eq!(
        texts.iter().filter(|t| t.ends_with('%')).count(),
        intent.len(),
        "one value per bar: {texts:?}"
    );
}

/// The legend sits in headroom above the tallest bar a rate can reach, so
/// it covers no bar: on traffic every value of which the smart gate skips
/// wholly (bars of 100% up to the right edge), and on committed reports.
#[test]
fn the_legend_covers_no_bar() {
    let d = Dir::new();
    let lines: String = ["en", "es", "de", "fr", "pt"]
        .iter()
        .map(|l| format!("{{\"run_id\":\"{l}\",\"language\":\"{l}\",\"draft\":\"ok\"}}\n"))
        .collect();
    let t = d.write("t.jsonl", lines);
    let out = d.path("o");
    expect_code(&replay_in(&out, &[t.to_str().unwrap(), "--quiet"]), 0);
    let tall = out.join("charts/skip_rate_by_language.svg");
    let attr = |tag: &str, name: &str| -> i64 {
        let at = tag.find(&format!(" {name}=\"")).unwrap() + name.len() + 3;
        tag[at..].split('"').next().unwrap().parse().unwrap()
    };
    for f in [
        tall,
        root().join("reports/multilingual/charts/skip_rate_by_language.svg"),
        root().join("reports/floors/charts/floors.svg"),
    ] {
        let svg = std::fs::read_to_string(&f).unwrap();
        let f = f.display();
        let rects: Vec<&str> = svg.lines().filter(|l| l.starts_with("<rect")).collect();
        let legend = rects
            .iter()
            .find(|l| l.contains("stroke=\"#000000\""))
            .unwrap_or_else(|| panic!("{f}: no legend box"));
        let (lx, ly, lw, lh) = (
            attr(legend, "x"),
            attr(legend, "y"),
            attr(legend, "width"),
            attr(legend, "height"),
        );
        let inside = |x: i64, y: i64| (lx..=lx + lw).contains(&x) && (ly..=ly + lh).contains(&y);
        let bars: Vec<(i64, i64, i64)> = rects
            .iter()
            .filter(|l| l.contains("fill=\"#1F77B4\"") || l.contains("fill=\"#FF7F0E\""))
            .map(|l| (attr(l, "x"), attr(l, "y"), attr(l, "width")))
            .filter(|&(x, y, _)| !inside(x, y)) // the legend's swatches
            .collect();
        assert!(bars.len() > 2, "{f}");
        for (x, y, w) in bars {
            assert!(
                x + w <= lx || x >= lx + lw || y > ly + lh,
                "{f}: a bar at x {x}..{} y {y} is under the legend {lx},{ly} {lw}x{lh}",
                x + w
            );
        }
    }
}
