//! The scenario interpreter (being built by the testkit helper).
