//! A hand-written SVG chart of timing distributions: one curve per engine on a log time axis.
//!
//! Two panels share the time axis: the cumulative fraction of masks at most that slow (linear,
//! where the medians read off), and the fraction at least that slow on a log scale (where the
//! tail, p99 and p99.9, reads off).

use std::fmt::Write as _;

const WIDTH: f64 = 960.0;
const LEFT: f64 = 80.0;
const RIGHT: f64 = 200.0;
const TOP: f64 = 50.0;
const PANEL: f64 = 260.0;
const GAP: f64 = 70.0;
const BOTTOM: f64 = 60.0;
const COLORS: &[&str] = &[
    "#1f77b4", "#2ca02c", "#d62728", "#9467bd", "#ff7f0e", "#8c564b", "#17becf",
];

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The label of the decade `10^d` µs.
fn time_label(d: i32) -> String {
    match d {
        ..0 => format!("{:.*} µs", d.unsigned_abs() as usize, 10f64.powi(d)),
        0..3 => format!("{} µs", 10u64.pow(d as u32)),
        3..6 => format!("{} ms", 10u64.pow(d as u32 - 3)),
        _ => format!("{} s", 10f64.powi(d - 6)),
    }
}

/// The chart as an SVG document. `series` holds `(name, values in µs)`, unsorted; empty series
/// are listed in the legend without a curve.
pub fn cdf_chart(title: &str, series: &[(&str, Vec<f64>)]) -> String {
    let sorted: Vec<(&str, Vec<f64>)> = series
        .iter()
        .map(|(n, v)| {
            let mut v: Vec<f64> = v.iter().map(|x| x.max(0.01)).collect();
            v.sort_by(f64::total_cmp);
            (*n, v)
        })
        .collect();
    let lo = sorted
        .iter()
        .filter_map(|(_, v)| v.first())
        .copied()
        .fold(f64::INFINITY, f64::min);
    let hi = sorted
        .iter()
        .filter_map(|(_, v)| v.last())
        .copied()
        .fold(0.0, f64::max);
    let (x0, x1) = if lo.is_finite() && hi > 0.0 {
        let a = lo.log10().floor();
        let b = hi.log10().ceil();
        (a, if b > a { b } else { a + 1.0 })
    } else {
        (0.0, 3.0)
    };
    let n_max = sorted
        .iter()
        .map(|(_, v)| v.len())
        .max()
        .unwrap_or(1)
        .max(10);
    // The tail panel goes down to the decade below 1/n.
    let y_min = -((n_max as f64).log10().ceil());
    let plot_w = WIDTH - LEFT - RIGHT;
    let height = TOP + 2.0 * PANEL + GAP + BOTTOM;
    let px = |us: f64| LEFT + (us.log10() - x0) / (x1 - x0) * plot_w;
    let top2 = TOP + PANEL + GAP;
    let py_cdf = |f: f64| TOP + (1.0 - f) * PANEL;
    let py_tail = |f: f64| top2 + (f.max(1e-300).log10() / y_min).clamp(0.0, 1.0) * PANEL;

    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" viewBox="0 0 {WIDTH} {height}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(s, r#"<rect width="100%" height="100%" fill="white"/>"#);
    let _ = writeln!(
        s,
        r#"<text x="{}" y="24" text-anchor="middle" font-size="15">{}</text>"#,
        LEFT + plot_w / 2.0,
        esc(title)
    );

    // Frames, vertical grid (decades of time) on both panels.
    for (top, label) in [
        (TOP, "fraction of masks at most this slow"),
        (top2, "fraction of masks at least this slow"),
    ] {
        let _ = writeln!(
            s,
            r##"<rect x="{LEFT}" y="{top}" width="{plot_w}" height="{PANEL}" fill="none" stroke="#333"/>"##
        );
        let _ = writeln!(
            s,
            r#"<text transform="translate({},{}) rotate(-90)" text-anchor="middle">{label}</text>"#,
            LEFT - 55.0,
            top + PANEL / 2.0
        );
        let mut d = x0;
        while d <= x1 + 1e-9 {
            let x = px(10f64.powf(d));
            let _ = writeln!(
                s,
                r##"<line x1="{x:.1}" y1="{top}" x2="{x:.1}" y2="{}" stroke="#ddd"/>"##,
                top + PANEL
            );
            let _ = writeln!(
                s,
                r#"<text x="{x:.1}" y="{}" text-anchor="middle">{}</text>"#,
                top + PANEL + 16.0,
                time_label(d as i32)
            );
            d += 1.0;
        }
    }
    let _ = writeln!(
        s,
        r#"<text x="{}" y="{}" text-anchor="middle">mask time (log scale)</text>"#,
        LEFT + plot_w / 2.0,
        height - 18.0
    );
    // Horizontal grid: tenths on the cumulative panel, decades on the tail panel.
    for k in 0..=10 {
        let f = f64::from(k) / 10.0;
        let y = py_cdf(f);
        let _ = writeln!(
            s,
            r##"<line x1="{LEFT}" y1="{y:.1}" x2="{}" y2="{y:.1}" stroke="#eee"/>"##,
            LEFT + plot_w
        );
        if k % 2 == 0 {
            let _ = writeln!(
                s,
                r#"<text x="{}" y="{:.1}" text-anchor="end">{f}</text>"#,
                LEFT - 6.0,
                y + 4.0
            );
        }
    }
    let mut d = 0.0;
    while d >= y_min - 1e-9 {
        let y = py_tail(10f64.powf(d));
        let _ = writeln!(
            s,
            r##"<line x1="{LEFT}" y1="{y:.1}" x2="{}" y2="{y:.1}" stroke="#eee"/>"##,
            LEFT + plot_w
        );
        let label = if d == 0.0 {
            "1".to_owned()
        } else {
            format!("1e{d}")
        };
        let _ = writeln!(
            s,
            r#"<text x="{}" y="{:.1}" text-anchor="end">{label}</text>"#,
            LEFT - 6.0,
            y + 4.0
        );
        d -= 1.0;
    }

    // Curves, thinned to about one point per pixel.
    for (k, (name, v)) in sorted.iter().enumerate() {
        let color = COLORS[k % COLORS.len()];
        let n = v.len() as f64;
        for (f, py) in [
            (
                &(|i: usize| (i as f64 + 1.0) / n) as &dyn Fn(usize) -> f64,
                &py_cdf as &dyn Fn(f64) -> f64,
            ),
            (&|i: usize| (n - i as f64) / n, &py_tail),
        ] {
            if v.is_empty() {
                continue;
            }
            let mut pts = String::new();
            let mut last = (f64::NEG_INFINITY, f64::NEG_INFINITY);
            for (i, &us) in v.iter().enumerate() {
                let p = (px(us), py(f(i)));
                if i + 1 == v.len() || (p.0 - last.0).abs() >= 0.7 || (p.1 - last.1).abs() >= 0.7 {
                    let _ = write!(pts, "{:.1},{:.1} ", p.0, p.1);
                    last = p;
                }
            }
            let _ = writeln!(
                s,
                r#"<polyline fill="none" stroke="{color}" stroke-width="1.8" points="{}"><title>{}</title></polyline>"#,
                pts.trim_end(),
                esc(name)
            );
        }
        // Legend.
        let ly = TOP + 10.0 + 22.0 * k as f64;
        let lx = LEFT + plot_w + 16.0;
        let _ = writeln!(
            s,
            r#"<line x1="{lx}" y1="{ly}" x2="{}" y2="{ly}" stroke="{color}" stroke-width="3"/>"#,
            lx + 22.0
        );
        let _ = writeln!(
            s,
            r#"<text x="{}" y="{}">{} ({} masks)</text>"#,
            lx + 28.0,
            ly + 4.0,
            esc(name),
            v.len()
        );
    }
    s.push_str("</svg>\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_polyline_pair_per_non_empty_series_and_escaped_text() {
        let svg = cdf_chart(
            "a <b> & c",
            &[
                ("x", vec![1.0, 2.0, 500.0, 3.0]),
                ("y&z", vec![]),
                ("w", vec![0.0, 40000.0]),
            ],
        );
        assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
        assert_eq!(svg.matches("<polyline").count(), 4);
        assert!(svg.contains("a &lt;b&gt; &amp; c"));
        assert!(svg.contains("y&amp;z (0 masks)"));
        // Decades from 0.01 µs to 100 ms are labelled.
        assert!(
            svg.contains(">0.01 µs<") && svg.contains(">100 ms<"),
            "{svg}"
        );
        assert_eq!(
            (time_label(-1), time_label(0), time_label(3), time_label(6)),
            ("0.1 µs".into(), "1 µs".into(), "1 ms".into(), "1 s".into())
        );
        assert!(!svg.contains("NaN") && !svg.contains("inf"));
    }

    #[test]
    fn empty_input_still_draws_axes() {
        let svg = cdf_chart("t", &[]);
        assert!(svg.contains("<rect") && !svg.contains("<polyline"));
        assert!(!svg.contains("NaN"));
    }
}
