module lockstep.dev/bugs/cache-1

go 1.22
