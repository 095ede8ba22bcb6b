//! VTK XML ImageData files (`.vti`), which ParaView and VisIt open directly: point data on a
//! regular grid (node (x, y, z) at the point (x, y, z)·spacing), each array stored as raw
//! little-endian binary in the file's appended section (`header_type="UInt64"`: every block is
//! preceded by its length in bytes as a little-endian u64), so writing is one pass and the
//! files are as small as raw binary gets.

use std::io::Write;
use std::path::Path;

use crate::files::write_whole;
use crate::lbm::Lattice;
use crate::{DType, Error, Grid, Real, Result};

/// The values of one point-data array.
#[derive(Clone, Copy, Debug)]
pub enum VtiValues<'a> {
    /// 32-bit floats.
    F32(&'a [f32]),
    /// 64-bit floats.
    F64(&'a [f64]),
    /// Unsigned bytes (flags, masks).
    U8(&'a [u8]),
}

/// A point-data array's values owned in a grid's own precision: `f32` values are written as
/// `Float32`, `f64` ones as `Float64`.
#[derive(Clone, Debug)]
pub enum VtiBuffer {
    /// 32-bit floats.
    F32(Vec<f32>),
    /// 64-bit floats.
    F64(Vec<f64>),
}

impl VtiBuffer {
    /// `values` converted once, in `T`'s precision.
    pub fn of<T: Real>(values: impl IntoIterator<Item = T>) -> VtiBuffer {
        let values = values.into_iter();
        match T::DTYPE {
            DType::F32 => VtiBuffer::F32(values.map(|x| x.to_f32().unwrap_or(f32::NAN)).collect()),
            DType::F64 => VtiBuffer::F64(values.map(|x| x.to_f64().unwrap_or(f64::NAN)).collect()),
        }
    }

    /// The values to write.
    pub fn values(&self) -> VtiValues<'_> {
        match self {
            VtiBuffer::F32(v) => VtiValues::F32(v),
            VtiBuffer::F64(v) => VtiValues::F64(v),
        }
    }
}

impl VtiValues<'_> {
    fn len(&self) -> usize {
        match self {
            VtiValues::F32(v) => v.len(),
            VtiValues::F64(v) => v.len(),
            VtiValues::U8(v) => v.len(),
        }
    }

    fn vtk_type(&self) -> &'static str {
        match self {
            VtiValues::F32(_) => "Float32",
            VtiValues::F64(_) => "Float64",
            VtiValues::U8(_) => "UInt8",
        }
    }

    fn byte_len(&self) -> usize {
        match self {
            VtiValues::F32(v) => 4 * v.len(),
            VtiValues::F64(v) => 8 * v.len(),
            VtiValues::U8(v) => v.len(),
        }
    }

    fn write(&self, out: &mut impl Write) -> std::io::Result<()> {
        match self {
            VtiValues::F32(v) => v.iter().try_for_each(|x| out.write_all(&x.to_le_bytes())),
            VtiValues::F64(v) => v.iter().try_for_each(|x| out.write_all(&x.to_le_bytes())),
            VtiValues::U8(v) => out.write_all(v),
        }
    }
}

/// One named point-data array: `components` values per point (1 for scalars, 3 for vectors),
/// interleaved, points in x-fastest order.
#[derive(Clone, Copy, Debug)]
pub struct VtiArray<'a> {
    /// The array's name as ParaView shows it.
    pub name: &'a str,
    /// Values per point.
    pub components: usize,
    /// `components · nx · ny · nz` values.
    pub values: VtiValues<'a>,
}

/// Writes `arrays` over a grid of `dims` points with unit spacing to `path` as VTK XML
/// ImageData with appended raw binary data. The first scalar array becomes the active
/// scalars, the first 3-component one the active vectors.
///
/// Errors: an array of the wrong length, a name that is empty or not plain XML text, I/O.
pub fn write_vti(path: &Path, dims: [usize; 3], arrays: &[VtiArray<'_>]) -> Result<()> {
    write_image(path, [0; 3], dims, [1.0; 3], arrays)
}

/// [`write_vti`] with points `spacing` apart along x, y and z (metres, say), so that ParaView
/// shows the image in the simulation's units.
///
/// Errors: as [`write_vti`], and a spacing that is not positive and finite.
pub fn write_vti_spaced(
    path: &Path,
    dims: [usize; 3],
    spacing: [f64; 3],
    arrays: &[VtiArray<'_>],
) -> Result<()> {
    if !spacing.iter().all(|h| h.is_finite() && *h > 0.0) {
        return Err(Error::InvalidArgument(format!(
            "a VTK image's spacing must be positive and finite, got {spacing:?}"
        )));
    }
    write_image(path, [0; 3], dims, spacing, arrays)
}

/// [`write_vti`] for a piece of a larger image: `dims` points starting at point `origin` of
/// the whole, as the pieces a [`write_pvti`] file lists are written.
pub fn write_vti_piece(
    path: &Path,
    origin: [usize; 3],
    dims: [usize; 3],
    arrays: &[VtiArray<'_>],
) -> Result<()> {
    write_image(path, origin, dims, [1.0; 3], arrays)
}

/// Writes the piece of `dims` points at point `origin`, points `spacing` apart.
fn write_image(
    path: &Path,
    origin: [usize; 3],
    dims: [usize; 3],
    spacing: [f64; 3],
    arrays: &[VtiArray<'_>],
) -> Result<()> {
    let points = crate::grid::element_count(&dims).ok_or_else(|| {
        Error::InvalidArgument(format!(
            "a {}x{}x{} piece has more points than the address space holds",
            dims[0], dims[1], dims[2]
        ))
    })?;
    for a in arrays {
        let needed = a.components.checked_mul(points);
        if a.components == 0 || needed != Some(a.values.len()) {
            return Err(Error::InvalidArgument(format!(
                "VTK array '{}' has {} values, {} points of {} components need {}",
                a.name,
                a.values.len(),
                points,
                a.components,
                needed.map_or("more than the address space holds".into(), |n| n
                    .to_string())
            )));
        }
        check_name(a)?;
    }
    let extent = extent_text(origin, dims)?;
    let mut header = String::new();
    header.push_str("<?xml version=\"1.0\"?>\n");
    header.push_str(
        "<VTKFile type=\"ImageData\" version=\"1.0\" byte_order=\"LittleEndian\" header_type=\"UInt64\">\n",
    );
    header.push_str(&format!(
        "  <ImageData WholeExtent=\"{extent}\" Origin=\"0 0 0\" Spacing=\"{} {} {}\">\n",
        spacing[0], spacing[1], spacing[2]
    ));
    header.push_str(&format!("    <Piece Extent=\"{extent}\">\n"));
    let scalars = arrays.iter().find(|a| a.components == 1);
    let vectors = arrays.iter().find(|a| a.components == 3);
    header.push_str("      <PointData");
    if let Some(s) = scalars {
        header.push_str(&format!(" Scalars=\"{}\"", s.name));
    }
    if let Some(v) = vectors {
        header.push_str(&format!(" Vectors=\"{}\"", v.name));
    }
    header.push_str(">\n");
    let mut offset = 0usize;
    for a in arrays {
        header.push_str(&format!(
            "        <DataArray type=\"{}\" Name=\"{}\" NumberOfComponents=\"{}\" format=\"appended\" offset=\"{offset}\"/>\n",
            a.values.vtk_type(),
            a.name,
            a.components
        ));
        offset += 8 + a.values.byte_len();
    }
    header.push_str("      </PointData>\n      <CellData/>\n    </Piece>\n  </ImageData>\n");
    header.push_str("  <AppendedData encoding=\"raw\">\n   _");
    let io = |e| Error::io(path, e);
    write_whole(path, |out| {
        out.write_all(header.as_bytes()).map_err(io)?;
        for a in arrays {
            out.write_all(&(a.values.byte_len() as u64).to_le_bytes())
                .map_err(io)?;
            a.values.write(out).map_err(io)?;
        }
        out.write_all(b"\n  </AppendedData>\n</VTKFile>\n")
            .map_err(io)
    })
}

/// Refuses an array whose name is empty or not plain XML text, or that has no components.
fn check_name(a: &VtiArray<'_>) -> Result<()> {
    let plain = |c: char| c.is_ascii_alphanumeric() || " _-.()".contains(c);
    if a.name.is_empty() || !a.name.chars().all(plain) {
        return Err(Error::InvalidArgument(format!(
            "VTK array name '{}' must be non-empty letters, digits, spaces or _-.()",
            a.name
        )));
    }
    if a.components == 0 {
        return Err(Error::InvalidArgument(format!(
            "VTK array '{}' has no components",
            a.name
        )));
    }
    Ok(())
}

/// Refuses a `.pvti` piece that is not a box inside `whole` or whose file name would not be
/// XML attribute text.
fn check_piece(whole: [usize; 3], (origin, dims, source): &PvtiPiece) -> Result<()> {
    let inside = (0..3).all(|a| {
        dims[a] > 0
            && origin[a]
                .checked_add(dims[a])
                .is_some_and(|end| end <= whole[a])
    });
    if !inside {
        return Err(Error::InvalidArgument(format!(
            "a .pvti piece of {}x{}x{} points from ({}, {}, {}) does not lie inside the \
             {}x{}x{}-point image",
            dims[0],
            dims[1],
            dims[2],
            origin[0],
            origin[1],
            origin[2],
            whole[0],
            whole[1],
            whole[2]
        )));
    }
    if source.is_empty()
        || source.contains(['"', '&', '<', '>'])
        || source.chars().any(char::is_control)
    {
        return Err(Error::InvalidArgument(format!(
            "a .pvti piece's file name {source:?} must be non-empty and hold none of \" & < > \
             or control characters"
        )));
    }
    Ok(())
}

/// One piece of a `.pvti` image: its first point, its size in points and its file's name.
pub type PvtiPiece = ([usize; 3], [usize; 3], String);

/// `"x0 x1 y0 y1 z0 z1"`: the points of a box of `dims` points from `origin`, inclusive.
///
/// Errors: a box without points on an axis, or one whose last point overflows the index type
/// ([`Error::InvalidArgument`]).
fn extent_text(origin: [usize; 3], dims: [usize; 3]) -> Result<String> {
    let last = |a: usize| origin[a].checked_add(dims[a].checked_sub(1)?);
    let (Some(x1), Some(y1), Some(z1)) = (last(0), last(1), last(2)) else {
        return Err(Error::InvalidArgument(format!(
            "a VTK box needs at least one point per axis within the index range: {}x{}x{} \
             points from ({}, {}, {})",
            dims[0], dims[1], dims[2], origin[0], origin[1], origin[2]
        )));
    };
    Ok(format!(
        "{} {x1} {} {y1} {} {z1}",
        origin[0], origin[1], origin[2]
    ))
}

/// Writes a `.pvti` file that joins `pieces` (each its first point, its size in points and the
/// name of its `.vti` file, relative to `path`'s directory) into one image of `whole` points
/// with the point arrays named and typed as `arrays` (their values are not used). ParaView
/// opens it as one data set. Pieces that share their boundary points join without gaps.
///
/// Errors: an array whose name is not plain text or that has no components, a piece that does
/// not lie inside the image or whose file name is not plain text, I/O.
pub fn write_pvti(
    path: &Path,
    whole: [usize; 3],
    pieces: &[PvtiPiece],
    arrays: &[VtiArray<'_>],
) -> Result<()> {
    arrays.iter().try_for_each(check_name)?;
    pieces.iter().try_for_each(|p| check_piece(whole, p))?;
    let mut text = String::from("<?xml version=\"1.0\"?>\n");
    text.push_str(
        "<VTKFile type=\"PImageData\" version=\"1.0\" byte_order=\"LittleEndian\" header_type=\"UInt64\">\n",
    );
    text.push_str(&format!(
        "  <PImageData WholeExtent=\"{}\" GhostLevel=\"0\" Origin=\"0 0 0\" Spacing=\"1 1 1\">\n",
        extent_text([0; 3], whole)?
    ));
    text.push_str("    <PPointData");
    if let Some(s) = arrays.iter().find(|a| a.components == 1) {
        text.push_str(&format!(" Scalars=\"{}\"", s.name));
    }
    if let Some(v) = arrays.iter().find(|a| a.components == 3) {
        text.push_str(&format!(" Vectors=\"{}\"", v.name));
    }
    text.push_str(">\n");
    for a in arrays {
        text.push_str(&format!(
            "      <PDataArray type=\"{}\" Name=\"{}\" NumberOfComponents=\"{}\"/>\n",
            a.values.vtk_type(),
            a.name,
            a.components
        ));
    }
    text.push_str("    </PPointData>\n");
    for (origin, dims, source) in pieces {
        text.push_str(&format!(
            "    <Piece Extent=\"{}\" Source=\"{source}\"/>\n",
            extent_text(*origin, *dims)?
        ));
    }
    text.push_str("  </PImageData>\n</VTKFile>\n");
    write_whole(path, |out| {
        out.write_all(text.as_bytes())
            .map_err(|e| Error::io(path, e))
    })
}

/// Writes a lattice's density, velocity and node kinds (0 fluid, 1 wall, 2 moving wall,
/// 3 inlet, 4 outlet; see [`Lattice::kind_codes`]) to `path` as a `.vti` file, in the
/// lattice's precision.
pub fn write_lattice_vti<T: Real>(path: &Path, lattice: &Lattice<T>) -> Result<()> {
    let dims = lattice.dims();
    write_lattice_vti_piece(path, lattice, [0; 3], [0..dims[0], 0..dims[1], 0..dims[2]])
}

/// [`write_lattice_vti`] for the nodes of `lattice` in `region` (x, y, z ranges), written as
/// a piece whose first point is `origin` of a larger image (see [`write_pvti`]).
pub fn write_lattice_vti_piece<T: Real>(
    path: &Path,
    lattice: &Lattice<T>,
    origin: [usize; 3],
    region: [std::ops::Range<usize>; 3],
) -> Result<()> {
    let dims = lattice.dims();
    if (0..3).any(|a| region[a].is_empty() || region[a].end > dims[a]) {
        return Err(Error::InvalidArgument(format!(
            "the region {region:?} is not inside the {dims:?} lattice"
        )));
    }
    let [density, ux, uy, uz] = lattice_moments(lattice)?;
    let moments = [&density, &ux, &uy, &uz];
    write_moments_vti_piece(path, moments, &lattice.kind_codes(), origin, region)
}

/// A lattice's density and velocity components, each a grid of its dimensions.
pub(crate) fn lattice_moments<T: Real>(lattice: &Lattice<T>) -> Result<[Grid<T>; 4]> {
    let density = lattice.density()?;
    let [ux, uy, uz] = lattice.velocity()?;
    Ok([density, ux, uy, uz])
}

/// [`write_lattice_vti_piece`] from a lattice's moments (density, then the velocity
/// components, as [`lattice_moments`] gives them) and node kinds ([`Lattice::kind_codes`]);
/// `region` lies inside the grids.
pub(crate) fn write_moments_vti_piece<T: Real>(
    path: &Path,
    [density, ux, uy, uz]: [&Grid<T>; 4],
    all_kinds: &[u8],
    origin: [usize; 3],
    region: [std::ops::Range<usize>; 3],
) -> Result<()> {
    let dims = density.dims();
    let rho = interleave_region(&[density], &region);
    let u = interleave_region(&[ux, uy, uz], &region);
    let mut kinds = Vec::new();
    for z in region[2].clone() {
        for y in region[1].clone() {
            let o = (z * dims[1] + y) * dims[0];
            kinds.extend_from_slice(&all_kinds[o + region[0].start..o + region[0].end]);
        }
    }
    let (rho, u) = (VtiBuffer::of(rho), VtiBuffer::of(u));
    write_vti_piece(
        path,
        origin,
        region.clone().map(|r| r.len()),
        &lattice_arrays(rho.values(), u.values(), VtiValues::U8(&kinds)),
    )
}

/// The point arrays of a lattice's `.vti` file: density, velocity and node kinds.
pub fn lattice_arrays<'a>(
    density: VtiValues<'a>,
    velocity: VtiValues<'a>,
    kinds: VtiValues<'a>,
) -> [VtiArray<'a>; 3] {
    [
        VtiArray {
            name: "density",
            components: 1,
            values: density,
        },
        VtiArray {
            name: "velocity",
            components: 3,
            values: velocity,
        },
        VtiArray {
            name: "kind",
            components: 1,
            values: kinds,
        },
    ]
}

/// [`interleave`] over the points of `region` (x, y, z ranges) only.
fn interleave_region<T: Real>(grids: &[&Grid<T>], region: &[std::ops::Range<usize>; 3]) -> Vec<T> {
    let points: usize = region.iter().map(|r| r.len()).product();
    let mut out = Vec::with_capacity(points * grids.len());
    for z in region[2].clone() {
        for y in region[1].clone() {
            for x in region[0].clone() {
                out.extend(grids.iter().map(|g| g.get(x, y, z)));
            }
        }
    }
    out
}

/// The values of `grids` interleaved point by point (x-fastest), as `f32` or `f64`
/// according to `T`: one grid gives a scalar array, three a vector array.
///
/// Errors: grids of different sizes ([`Error::InvalidArgument`]).
pub fn interleave<T: Real>(grids: &[&Grid<T>]) -> Result<Vec<T>> {
    let Some(first) = grids.first() else {
        return Ok(Vec::new());
    };
    let [nx, ny, nz] = first.dims();
    if let Some(g) = grids.iter().find(|g| g.dims() != [nx, ny, nz]) {
        let [a, b, c] = g.dims();
        return Err(Error::InvalidArgument(format!(
            "grids interleaved into one VTK array have one size: {nx}x{ny}x{nz} and {a}x{b}x{c}"
        )));
    }
    let mut out = Vec::with_capacity(nx * ny * nz * grids.len());
    for z in 0..nz {
        for y in 0..ny {
            for x in 0..nx {
                out.extend(grids.iter().map(|g| g.get(x, y, z)));
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_of_a_small_file() {
        let dir = std::env::temp_dir().join(format!("stencil35d-vti-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("t.vti");
        let rho = [1.0f32, 2.0, 3.0, 4.0];
        let u = [0.5f64; 12];
        let flags = [0u8, 1, 0, 1];
        write_vti(
            &path,
            [2, 2, 1],
            &[
                VtiArray {
                    name: "density",
                    components: 1,
                    values: VtiValues::F32(&rho),
                },
                VtiArray {
                    name: "velocity",
                    components: 3,
                    values: VtiValues::F64(&u),
                },
                VtiArray {
                    name: "flag",
                    components: 1,
                    values: VtiValues::U8(&flags),
                },
            ],
        )
        .unwrap();
        let bytes = std::fs::read(&path).unwrap();
        let text = String::from_utf8_lossy(&bytes);
        assert!(text.contains("WholeExtent=\"0 1 0 1 0 0\""));
        assert!(text.contains("Spacing=\"1 1 1\""), "{text}");
        assert!(text.contains(
            "Name=\"velocity\" NumberOfComponents=\"3\" format=\"appended\" offset=\"24\""
        ));
        assert!(text.contains("offset=\"128\""), "{text}");
        let marker = b"encoding=\"raw\">\n   _";
        let start = bytes
            .windows(marker.len())
            .position(|w| w == marker)
            .unwrap()
            + marker.len();
        assert_eq!(
            u64::from_le_bytes(bytes[start..start + 8].try_into().unwrap()),
            16
        );
        assert_eq!(
            f32::from_le_bytes(bytes[start + 8 + 8..start + 12 + 8].try_into().unwrap()),
            3.0
        );
        assert!(text.trim_end().ends_with("</VTKFile>"));
        assert!(write_vti(
            &path,
            [2, 2, 2],
            &[VtiArray {
                name: "x",
                components: 1,
                values: VtiValues::U8(&flags)
            }]
        )
        .is_err());
        assert!(write_vti(
            &path,
            [2, 2, 1],
            &[VtiArray {
                name: "a\"b",
                components: 1,
                values: VtiValues::U8(&flags)
            }]
        )
        .is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_spaced_image_carries_its_spacing_and_refuses_a_bad_one() {
        let dir = std::env::temp_dir().join(format!("stencil35d-vti-h-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("h.vti");
        let p = [0.25f32; 6];
        let arrays = [VtiArray {
            name: "pressure",
            components: 1,
            values: VtiValues::F32(&p),
        }];
        write_vti_spaced(&path, [3, 2, 1], [10.0, 12.5, 0.5], &arrays).unwrap();
        let text = String::from_utf8_lossy(&std::fs::read(&path).unwrap()).into_owned();
        assert!(text.contains("Spacing=\"10 12.5 0.5\""), "{text}");
        for bad in [[0.0, 1.0, 1.0], [1.0, f64::NAN, 1.0], [1.0, 1.0, -2.0]] {
            assert!(write_vti_spaced(&path, [3, 2, 1], bad, &arrays).is_err());
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
