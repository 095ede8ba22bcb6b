//! [`Scratch`]: the buffers a solver keeps between runs (a second grid or population array, or
//! device buffers), of whichever type the last run needed.

use std::any::Any;

use crate::Result;

/// One kept buffer of any type; a run takes it out, uses it and puts it back, so the solver's
/// other parts (its threads) stay free to borrow meanwhile.
#[derive(Default)]
pub(crate) struct Scratch(Option<Box<dyn Any + Send>>);

impl Scratch {
    /// The kept buffer if it is a `B` that `fits` accepts, else a new one from `make`; a kept
    /// buffer that does not serve is freed before `make` allocates.
    pub(crate) fn take<B: Any + Send>(
        &mut self,
        fits: impl Fn(&B) -> bool,
        make: impl FnOnce() -> Result<B>,
    ) -> Result<Box<B>> {
        if let Some(Ok(kept)) = self.0.take().map(|b| b.downcast::<B>()) {
            if fits(&kept) {
                return Ok(kept);
            }
        }
        Ok(Box::new(make()?))
    }

    /// Runs `f` on the kept buffer (or a new one, as [`Scratch::take`]) and keeps the buffer
    /// again, whatever `f` returns.
    pub(crate) fn with<B: Any + Send, R>(
        &mut self,
        fits: impl Fn(&B) -> bool,
        make: impl FnOnce() -> Result<B>,
        f: impl FnOnce(&mut B) -> Result<R>,
    ) -> Result<R> {
        let mut buffer = self.take(fits, make)?;
        let outcome = f(&mut buffer);
        self.keep(buffer);
        outcome
    }

    /// Keeps `buffer` for the next run.
    pub(crate) fn keep<B: Any + Send>(&mut self, buffer: Box<B>) {
        self.0 = Some(buffer);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kept_buffer_is_reused_only_when_it_fits() {
        let mut s = Scratch::default();
        let first = s.take(|_: &Vec<u8>| true, || Ok(vec![1u8; 4])).unwrap();
        s.keep(first);
        let reused = s
            .take(|v: &Vec<u8>| v.len() == 4, || Ok(vec![2u8; 4]))
            .unwrap();
        assert_eq!(*reused, vec![1u8; 4], "a fitting buffer is reused");
        s.keep(reused);
        let remade = s
            .take(|v: &Vec<u8>| v.len() == 8, || Ok(vec![3u8; 8]))
            .unwrap();
        assert_eq!(
            *remade,
            vec![3u8; 8],
            "a buffer that does not fit is replaced"
        );
        s.keep(remade);
        let other = s.take(|_: &String| true, || Ok(String::from("x"))).unwrap();
        assert_eq!(*other, "x", "a buffer of another type is replaced");
    }
}
