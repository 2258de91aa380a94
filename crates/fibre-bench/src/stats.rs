//! Median and median absolute deviation (the study's robust centre and spread), and quantiles
//! for tails.

/// The median of `xs` (the mean of the two middle values for an even count); NaN when empty.
pub fn median(xs: &[f64]) -> f64 {
    if xs.is_empty() {
        return f64::NAN;
    }
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// The `q` quantile of `xs` (nearest rank: a value that was measured, as tails are reported).
pub fn quantile(xs: &[f64], q: f64) -> f64 {
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    if v.is_empty() {
        return f64::NAN;
    }
    v[((q * v.len() as f64).ceil() as usize).clamp(1, v.len()) - 1]
}

/// Median absolute deviation from the median.
pub fn mad(xs: &[f64]) -> f64 {
    let m = median(xs);
    let dev: Vec<f64> = xs.iter().map(|x| (x - m).abs()).collect();
    median(&dev)
}

/// A measurement repeated `runs` times: its median and MAD.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Summary {
    pub value: f64,
    pub spread: f64,
    pub runs: usize,
}

impl Summary {
    pub fn of(xs: &[f64]) -> Self {
        Summary {
            value: median(xs),
            spread: mad(xs),
            runs: xs.len(),
        }
    }
    pub fn once(x: f64) -> Self {
        Summary {
            value: x,
            spread: 0.0,
            runs: 1,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_are_nearest_rank() {
        let xs: Vec<f64> = (1..=1000).map(f64::from).rev().collect();
        assert_eq!(quantile(&xs, 0.999), 999.0);
        assert_eq!(quantile(&xs, 1.0), 1000.0);
        assert_eq!(quantile(&xs, 0.0), 1.0);
        assert_eq!(quantile(&[7.0], 0.999), 7.0);
        assert!(quantile(&[], 0.5).is_nan());
    }

    #[test]
    fn median_and_mad() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
        assert!(median(&[]).is_nan());
        // deviations from 2: 1, 1, 0, 2, 98 -> median 1
        assert_eq!(mad(&[1.0, 3.0, 2.0, 4.0, 100.0]), 1.0);
    }
}
