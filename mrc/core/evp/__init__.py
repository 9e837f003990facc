"""The EV selection policies, one module each; `mrc.core.evpolicy` registers them and is their
one entry point. docs/protocol.md, "Adding an EV policy", says what a module must define."""
