module lockstep.dev/bugs/locks2

go 1.22
