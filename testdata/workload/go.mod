module lockstep.dev/workload

go 1.22
