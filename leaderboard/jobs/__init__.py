"""The verification as a job that runs anywhere: the `verify-job` command's steps (`verify_job`), what a
job will do and cost (`job_plan`), where jobs run (`job_backends`) and the Space's pass over them
(`job_keeper`)."""
