//! Loops unrolled by hand (`#pragma unroll` in CUDA C), for the tile loops LLVM keeps rolled.

/// `$body` for `$i` = 0, 1, .., 31 as straight-line code (`$i` a `u32` constant in each copy):
/// a tile loop unrolled by hand where LLVM would keep it rolled.
macro_rules! unroll_tile {
    ($i:ident => $body:block) => {
        unroll_tile!(@ $i $body; 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31)
    };
    (@ $i:ident $body:block; $($n:literal)*) => {
        $({
            let $i: u32 = $n;
            $body
        })*
    };
}

/// `$body` for `$i` = 0, 1, .., 15 as straight-line code.
macro_rules! unroll_16 {
    ($i:ident => $body:block) => {
        unroll_tile!(@ $i $body; 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15)
    };
}

/// `$body` for `$i` = 0, 1, .., 7 as straight-line code.
macro_rules! unroll_8 {
    ($i:ident => $body:block) => {
        unroll_tile!(@ $i $body; 0 1 2 3 4 5 6 7)
    };
}

/// `$body` for `$i` = 0, 1, 2, 3 as straight-line code.
macro_rules! unroll_4 {
    ($i:ident => $body:block) => {
        unroll_tile!(@ $i $body; 0 1 2 3)
    };
}

/// `$body` for `$i` = 0, 1 as straight-line code.
macro_rules! unroll_2 {
    ($i:ident => $body:block) => {
        unroll_tile!(@ $i $body; 0 1)
    };
}
