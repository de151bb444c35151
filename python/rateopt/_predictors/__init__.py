"""_predictors."""
