"""Reading contracts: files -> documents -> validated contracts -> plans. Imports neither SQLAlchemy nor Dagster."""
