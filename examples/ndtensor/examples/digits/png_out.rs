//! The pictures of the `train_digits` example, as PNG files (the `png` crate encodes an RGB
//! buffer drawn here): the loss curves, and a grid of misclassified test images.

use std::fs::File;
use std::io::BufWriter;
use std::path::Path;

/// An RGB canvas.
struct Canvas {
    w: usize,
    h: usize,
    px: Vec<u8>,
}

impl Canvas {
    fn new(w: usize, h: usize) -> Self {
        Canvas {
            w,
            h,
            px: vec![255; w * h * 3],
        }
    }
    fn set(&mut self, x: i64, y: i64, c: [u8; 3]) {
        if x >= 0 && y >= 0 && (x as usize) < self.w && (y as usize) < self.h {
            let i = (y as usize * self.w + x as usize) * 3;
            self.px[i..i + 3].copy_from_slice(&c);
        }
    }
    /// A line of width 2 (Bresenham's, doubled).
    fn line(&mut self, (x0, y0): (i64, i64), (x1, y1): (i64, i64), c: [u8; 3]) {
        let (dx, dy) = ((x1 - x0).abs(), -(y1 - y0).abs());
        let (sx, sy) = (if x0 < x1 { 1 } else { -1 }, if y0 < y1 { 1 } else { -1 });
        let (mut x, mut y, mut err) = (x0, y0, dx + dy);
        loop {
            self.set(x, y, c);
            self.set(x, y + 1, c);
            if x == x1 && y == y1 {
                break;
            }
            let e2 = 2 * err;
            if e2 >= dy {
                err += dy;
                x += sx;
            }
            if e2 <= dx {
                err += dx;
                y += sy;
            }
        }
    }
    fn rect(&mut self, x: usize, y: usize, w: usize, h: usize, c: [u8; 3]) {
        for yy in y..y + h {
            for xx in x..x + w {
                self.set(xx as i64, yy as i64, c);
            }
        }
    }
    fn save(&self, path: &Path) -> Result<(), Box<dyn std::error::Error>> {
        let mut enc = png::Encoder::new(
            BufWriter::new(File::create(path)?),
            self.w as u32,
            self.h as u32,
        );
        enc.set_color(png::ColorType::Rgb);
        enc.set_depth(png::BitDepth::Eight);
        enc.write_header()?.write_image_data(&self.px)?;
        Ok(())
    }
}

const BLUE: [u8; 3] = [31, 119, 180];
const RED: [u8; 3] = [214, 39, 40];
const GRID: [u8; 3] = [225, 225, 225];
const BLACK: [u8; 3] = [0, 0, 0];

/// The per-epoch training (blue) and test (red) losses, epochs along x from 1, the loss
/// along y from 0 to the largest (grid lines at every fifth of the range and every tenth
/// of the epochs).
pub fn loss_curve(
    path: &Path,
    train: &[f64],
    test: &[f64],
) -> Result<(), Box<dyn std::error::Error>> {
    let (w, h, m) = (720usize, 440usize, 40i64);
    let mut c = Canvas::new(w, h);
    let ymax = train.iter().chain(test).fold(0.0f64, |a, b| a.max(*b)) * 1.05;
    let n = train.len().max(2);
    let (pw, ph) = (w as i64 - 2 * m, h as i64 - 2 * m);
    let at = |i: usize, v: f64| {
        let x = m + (i as i64 * pw) / (n as i64 - 1);
        let y = h as i64 - m - ((v / ymax) * ph as f64).round() as i64;
        (x, y)
    };
    for k in 0..=5 {
        let y = h as i64 - m - k * ph / 5;
        c.line((m, y), (m + pw, y), GRID);
    }
    for k in 0..=10 {
        let x = m + k * pw / 10;
        c.line((x, m), (x, m + ph), GRID);
    }
    c.line((m, m), (m, m + ph), BLACK);
    c.line((m, m + ph), (m + pw, m + ph), BLACK);
    for (series, color) in [(train, BLUE), (test, RED)] {
        for i in 1..series.len() {
            c.line(at(i - 1, series[i - 1]), at(i, series[i]), color);
        }
    }
    c.save(path)
}

/// Misclassified test images (0..=16 pixels, dark on light), each scaled 8 times with a
/// red frame, in rows of eight.
pub fn mistakes(path: &Path, images: &[[u8; 64]]) -> Result<(), Box<dyn std::error::Error>> {
    let (scale, pad, per_row) = (8usize, 6usize, 8usize);
    let cell = 8 * scale + 2 * pad;
    let rows = images.len().div_ceil(per_row).max(1);
    let mut c = Canvas::new(cell * per_row.min(images.len().max(1)), cell * rows);
    for (k, img) in images.iter().enumerate() {
        let (ox, oy) = ((k % per_row) * cell, (k / per_row) * cell);
        c.rect(ox + 2, oy + 2, cell - 4, cell - 4, RED);
        c.rect(
            ox + pad - 1,
            oy + pad - 1,
            8 * scale + 2,
            8 * scale + 2,
            [255; 3],
        );
        for (i, p) in img.iter().enumerate() {
            let v = 255 - (u16::from(*p) * 255 / 16) as u8;
            c.rect(
                ox + pad + (i % 8) * scale,
                oy + pad + (i / 8) * scale,
                scale,
                scale,
                [v; 3],
            );
        }
    }
    c.save(path)
}
