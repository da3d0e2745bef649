"""The Dagster edge: plans -> asset specs, checks, jobs, schedules, sensors, the component and the resource."""
