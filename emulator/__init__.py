"""(see docs/architecture.md)"""
