//! Ring buffers of the blocked lattice engine: how many planes or rows each level keeps per z
//! class of directions (those pulled from plane `z + 1`, `z` and `z − 1`), and so how much cache
//! a pass needs. The engine allocates these sizes and the planner charges them.

/// Planes a level runs behind the level below within a pipeline step: a group of one thread
/// computes its levels in order, so a level may read the plane the level below has just
/// written (1); several threads compute their levels side by side, so a level reads only planes
/// finished at earlier steps (2 = R + 1).
pub(crate) fn lag(members: usize) -> usize {
    if members == 1 {
        1
    } else {
        2
    }
}

/// Ring slots each z class (`1 − c_z` of a direction) keeps with `lag`: a level computing plane `z`
/// pulls class `c` from plane `z − 1 + c` of the level below and reads plane `z` for
/// bounce-back, while the level below writes (or has just written) plane `z + lag`; so class 0
/// (`c_z = +1`) needs planes `z − 1 ..= z + lag` and the others `z ..= z + lag`. With lag 1 the
/// 19 directions keep 43 tile planes instead of the 76 of four whole slots (2R + 2 planes).
pub(crate) fn ring_slots(lag: usize) -> [usize; 3] {
    [lag + 2, lag + 1, lag + 1]
}

/// Ring slots (rows) each z class keeps in a ring of rows for a level `height` rows high (see
/// `lbm::rows::Slots::Rows`): a one-thread group computes its levels `ROW_BATCH` rows at a time, level
/// `j` running `height + 1` row positions behind level `j − 1` (so row `(y + 1, z + 1)` below
/// is done when row `(y, z)` is computed), and reads rows `(y − 1 ..= y + 1, z − 1 + c)` for
/// class `c` and `(y, z)` for bounce-back. Counting from the reader's first position of a
/// batch, class 0 (`c_z = +1`) needs positions from `−(height + 1)`, class 1 from `−1` and
/// class 2 from `0`, up to `height + ROW_BATCH`, the last one the level below writes in the
/// batch.
pub(crate) fn row_slots(height: usize) -> [usize; 3] {
    let b = ROW_BATCH;
    [2 * height + 2 + b, height + 2 + b, height + 1 + b]
}

/// Rows a level of a one-thread group computes in succession before the next level takes its turn
/// (see `lbm::blocked::Pass::row_batches`); each class keeps `ROW_BATCH − 1` rows more than with one. Four
/// rows run as fast as whole planes on the 2-core AMD EPYC Zen 5 (D3Q19 `f32` 192³, `dim_t` 4
/// 200×38, MLUPS: 397 / 399 / 390 / 403 against 391 / 396 / 389 / 391; one row 374 / 371 /
/// 371 / 406), and faster than two or eight on the H100 machine's 16-core host.
pub(crate) const ROW_BATCH: usize = 4;

/// Whether a pass keeps its rings as rings of rows (`Slots::Rows`, a little over half the
/// memory of a ring of planes): one-thread groups, on tiles that do not wrap a periodic y axis
/// within themselves (a level's row 0 would read its last row, computed a plane later).
pub(crate) fn keeps_rows(members: usize, whole_y: bool) -> bool {
    members == 1 && !whole_y
}

/// Tile rows one ring level keeps for tile groups of `members` threads on tiles whose level 1
/// is `height` rows high (the planner's working set of a lattice pass), for `directions[c]`
/// directions in z class `c`: for D3Q19 (5, 9, 5) that is `24·height + 33 + 19·ROW_BATCH` in a
/// ring of rows, `43·height` (one thread) or `62·height` in a ring of planes.
pub(crate) fn ring_rows(
    members: usize,
    whole_y: bool,
    height: usize,
    directions: [usize; 3],
) -> usize {
    let per_class = if keeps_rows(members, whole_y) {
        row_slots(height)
    } else {
        ring_slots(lag(members)).map(|s| s * height)
    };
    (0..3).map(|c| per_class[c] * directions[c]).sum()
}
