module lockstep.dev/bugs/retry-1

go 1.22
