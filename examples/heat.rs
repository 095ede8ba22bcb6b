//! User story: "I want to diffuse heat in a 3D block fast, without tuning anything."
//!
//! A cube starts cold, with its x = 0 wall held hot (the fixed boundary); the planner picks the
//! engine, dim_t and tile for this machine, the solver runs, and the result is written as a PNG
//! slice. Run with `cargo run --release --example heat`.

use stencil35d::output::{write_png, ColorMap, Slice};
use stencil35d::{Grid, Plan, Solver, Stencil};

fn main() -> Result<(), stencil35d::Error> {
    // u <- (1 - 6ν)·u + ν·(six neighbours), ν = 1/7: stable explicit diffusion.
    let nu = 1.0 / 7.0;
    let stencil = Stencil::seven_point(1.0 - 6.0 * nu, nu);
    let mut grid = Grid::<f32>::from_fn([128, 128, 128], |x, _, _| if x == 0 { 1.0 } else { 0.0 })?;

    let plan = Plan::for_grid(&stencil, &grid)?;
    println!("{plan}");
    let report = Solver::new(plan).run(&mut grid, 400)?;
    println!("{report}");

    // How far the heat got: the temperature along the x axis through the middle.
    let profile: Vec<String> = (0..8)
        .map(|i| format!("{:.3}", grid.get(i * 4, 64, 64)))
        .collect();
    println!("u(x = 0, 4, ..., 28) = {}", profile.join(" "));

    std::fs::create_dir_all("out").map_err(|e| stencil35d::Error::io("out", e))?;
    let path = std::path::Path::new("out/example-heat.png");
    write_png(
        path,
        &Slice::z_plane(&grid, 64),
        ColorMap::Inferno,
        Some((0.0, 1.0)),
        3,
    )?;
    println!("wrote {}", path.display());
    Ok(())
}
