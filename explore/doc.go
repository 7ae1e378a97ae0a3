// Package explore is the corpus of an exploring campaign (strategy
// `explore`): the trials that showed features no earlier trial had
// (package coverage), each kept as its records, and the plan of each new
// trial: a fresh draw, or a corpus entry's prefix forced and one change
// made where it ends (sched.Branch), the entry picked with energy to rare
// features. Past a bound it packs the records of the entries used least
// recently, losslessly, and unpacks one when a branch starts from it.
//
// It owns the choice of what to run next, never the running: the engine
// runs the trial a Plan describes and hands its features back with Add.
// Nothing here depends on timing: a View is frozen from the corpus for a
// generation of trials, and a plan is drawn from the View and the trial's
// seed alone.
package explore
