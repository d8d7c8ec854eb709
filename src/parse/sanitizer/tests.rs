//! Unit tests of the sanitizer log reader over the recorded fixtures.
